// POST /v2/sandboxes (SDK 2.50+) and POST /sandboxes (SDK 2.6–2.49): create a sandbox.
import type { FastifyInstance, FastifyReply } from "fastify";
import { BurrowError, Code } from "@burrow/protocol";
import { lifecycleFromCreate } from "../../lifecycle/sandbox-lifecycle.js";
import type { ApiContext } from "../context.js";
import { errorResponses, newSandboxSchema } from "../schemas.js";
import { strictJsonBody } from "../strict-json.js";
import { hasEgressRules, networkFromCreate, type NetworkBody } from "../../network/network-config.js";
import { applyCreateNetwork } from "./network.js";
import { toSandbox } from "./serialize.js";

interface NewSandboxBody {
  templateID: string;
  timeout?: number;
  metadata?: Record<string, string>;
  envVars?: Record<string, string>;
  allow_internet_access?: boolean;
  mcp?: object | null;
  network?: NetworkBody;
  autoPause?: boolean;
  autoPauseMemory?: boolean;
  autoResume?: { enabled?: boolean };
  volumeMounts?: unknown[];
}

/**
 * Features a request may ask for that Burrow cannot honour yet. Refusing is better than a sandbox that silently
 * lacks what the caller relies on (an egress rule, a volume…).
 */
function unsupportedFeature(body: NewSandboxBody): string | undefined {
  if (body.volumeMounts?.length) return "volume mounts are not supported yet";
  return undefined;
}

/** Aborts when the client disconnects before the response is written, so a slow create is not wasted work. */
function clientGoneSignal(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once("close", () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}

export function registerCreateRoutes(app: FastifyInstance, ctx: ApiContext): void {
  for (const url of ["/v2/sandboxes", "/sandboxes"]) {
    app.post<{ Body: NewSandboxBody }>(
      url,
      {
        preValidation: strictJsonBody,
        schema: {
          summary: "Create a sandbox from a template",
          body: newSandboxSchema,
          response: { 201: { $ref: "Sandbox#" }, ...errorResponses(400, 401, 404, 429, 500, 501, 507) },
        },
      },
      async (request, reply) => {
        const body = request.body;
        const unsupported = unsupportedFeature(body);
        if (unsupported) throw new BurrowError(Code.Unimplemented, unsupported);
        // Validated before anything starts: a bad entry is a 400 and nothing was created.
        const network = networkFromCreate(body.network);
        const allowInternetAccess = body.allow_internet_access ?? true;
        // With rules of its own the sandbox starts cut off and gets its rules before it is handed out.
        const withRules = hasEgressRules(network);
        if (withRules && !ctx.orchestrator.setSandboxEgress) {
          throw new BurrowError(Code.Unimplemented, "egress rules are not supported by this orchestrator", { reason: "egress_unsupported" });
        }
        const lifecycle = lifecycleFromCreate(body);
        const row = await ctx.sandboxes.create({
          template: body.templateID,
          ...(body.timeout !== undefined ? { timeoutSec: body.timeout } : {}),
          metadata: body.metadata ?? {},
          envVars: body.envVars ?? {},
          ...(withRules ? { allowInternetAccess: false } : body.allow_internet_access !== undefined ? { allowInternetAccess } : {}),
          apiKeyId: request.apiKeyId,
          // E2B keeps the `mcp` field and the SDK itself starts the gateway in the sandbox (`mcp-gateway --config`).
          ...(body.mcp ? { mcpServers: Object.keys(body.mcp) } : {}),
          lifecycle,
          signal: clientGoneSignal(reply),
        });
        if (network) {
          try {
            await applyCreateNetwork(ctx, row, network, allowInternetAccess, withRules);
          } catch (err) {
            await ctx.sandboxes.kill(row.sandboxId).catch(() => undefined);
            throw err;
          }
        }
        const sandbox = toSandbox(row, ctx.config);
        return reply.code(201).send({ ...sandbox, trafficAccessToken: network?.trafficAccessToken ?? null });
      },
    );
  }
}
