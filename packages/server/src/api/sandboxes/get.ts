// GET /sandboxes/:sandboxID — SandboxDetail.
import type { FastifyInstance } from "fastify";
import type { ApiContext } from "../context.js";
import { errorResponses, sandboxIdParams } from "../schemas.js";
import { networkView } from "../../network/network-config.js";
import { toSandboxDetail } from "./serialize.js";

export function registerGetRoute(app: FastifyInstance, ctx: ApiContext): void {
  app.get<{ Params: { sandboxID: string } }>(
    "/sandboxes/:sandboxID",
    {
      schema: {
        summary: "Get a sandbox",
        params: sandboxIdParams,
        response: { 200: { $ref: "SandboxDetail#" }, ...errorResponses(401, 404) },
      },
    },
    async (request) => {
      const row = ctx.sandboxes.require(request.params.sandboxID);
      const network = ctx.networks.get(row.sandboxId);
      return {
        ...toSandboxDetail(row, ctx.config),
        ...(network ? { network: networkView(network) } : {}),
        volumeMounts: ctx.volumes.mountsOf(row.sandboxId),
      };
    },
  );
}
