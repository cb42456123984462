// E2B's sandbox network config: applied after a create (applyCreateNetwork) and replaced live by
// PUT /sandboxes/{id}/network. The firewall change comes first (one transaction in the orchestrator, a failing one
// leaves the old rules) and the store follows, so the stored config is always the one enforced.
import type { FastifyInstance } from "fastify";
import { BurrowError, Code } from "@burrow/protocol";
import type { SandboxRow } from "../../store/sandboxes.js";
import { egressOf, networkFromUpdate, type NetworkUpdateBody, type SandboxNetworkConfig } from "../../network/network-config.js";
import type { ApiContext } from "../context.js";
import { errorResponses, networkUpdateSchema, sandboxIdParams } from "../schemas.js";
import { strictJsonBody } from "../strict-json.js";

function egressUnsupported(): BurrowError {
  return new BurrowError(Code.Unimplemented, "egress rules are not supported by this orchestrator", { reason: "egress_unsupported" });
}

/**
 * Give a just-created sandbox its config. A sandbox with egress rules was created without internet access, so it
 * reached nothing before its rules were in place; on failure the caller kills it.
 */
export async function applyCreateNetwork(
  ctx: ApiContext,
  row: SandboxRow,
  config: SandboxNetworkConfig,
  allowInternetAccess: boolean,
  withRules: boolean,
): Promise<void> {
  if (withRules) {
    if (!ctx.orchestrator.setSandboxEgress) throw egressUnsupported();
    const record = await ctx.orchestrator.setSandboxEgress(row.sandboxId, egressOf(config, allowInternetAccess));
    if (!record) throw new BurrowError(Code.NotFound, `sandbox "${row.sandboxId}" ended while its network rules were applied`);
  }
  ctx.networks.put(row.sandboxId, config, allowInternetAccess);
}

export function registerNetworkRoutes(app: FastifyInstance, ctx: ApiContext): void {
  app.put<{ Params: { sandboxID: string }; Body: NetworkUpdateBody }>(
    "/sandboxes/:sandboxID/network",
    {
      preValidation: strictJsonBody,
      schema: {
        summary: "Replace a sandbox's network rules live (omitted allowOut/denyOut are cleared)",
        params: sandboxIdParams,
        body: networkUpdateSchema,
        response: { 204: { type: "null" }, ...errorResponses(400, 401, 404, 500, 501) },
      },
    },
    async (request, reply) => {
      const { sandboxID } = request.params;
      const row = ctx.sandboxes.require(sandboxID);
      const next = networkFromUpdate(ctx.networks.get(sandboxID), request.body ?? {});
      // allow_internet_access is switched when sent; an update about rules alone keeps it as it is.
      const allowInternetAccess = request.body?.allow_internet_access ?? row.allowInternetAccess;
      if (!ctx.orchestrator.setSandboxEgress) throw egressUnsupported();
      const record = await ctx.orchestrator.setSandboxEgress(sandboxID, egressOf(next, allowInternetAccess));
      // Killed meanwhile: the same answer as for any unknown sandbox.
      if (!record) throw new BurrowError(Code.NotFound, `sandbox "${sandboxID}" doesn't exist or you don't have access to it`);
      ctx.networks.put(sandboxID, next, allowInternetAccess);
      return reply.code(204).send();
    },
  );
}
