// POST /v2/sandboxes (SDK 2.50+) and POST /sandboxes (SDK 2.6–2.49): create a sandbox.
import type { FastifyInstance, FastifyReply } from "fastify";
import { BurrowError, Code } from "@burrow/protocol";
import { lifecycleFromCreate } from "../../lifecycle/sandbox-lifecycle.js";
import type { ApiContext } from "../context.js";
import { errorResponses, newSandboxSchema } from "../schemas.js";
import { strictJsonBody } from "../strict-json.js";
import { hasEgressRules, networkFromCreate, withInheritedEgress, type NetworkBody } from "../../network/network-config.js";
import { ruleSecretsOwner } from "../../network/rule-secrets.js";
import { refuseIdentityTokens } from "../../network/identity-tokens.js";
import { inheritedNetwork } from "./network.js";
import { toSandbox } from "./serialize.js";
import type { CreatePlacement } from "../../cluster/create-placement.js";

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
  iam?: { tokens?: Record<string, unknown> | null } | null;
}

/** Whether a create sets egress of its own (the internet switch or allowOut/denyOut entries). */
function setsEgress(body: NewSandboxBody): boolean {
  return body.allow_internet_access !== undefined || (body.network?.allowOut?.length ?? 0) > 0 || (body.network?.denyOut?.length ?? 0) > 0;
}

/**
 * Features a request may ask for that Burrow cannot honour yet. Refusing is better than a sandbox that silently
 * lacks what the caller relies on (an egress rule, a volume…).
 */
function unsupportedFeature(_body: NewSandboxBody): string | undefined {
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

/** `placement`: on a node of a cluster, where the create goes (another node answers it when chosen). */
export function registerCreateRoutes(app: FastifyInstance, ctx: ApiContext, placement?: CreatePlacement): void {
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
        if (placement && (await placement.place(request, reply, body))) return reply;
        const unsupported = unsupportedFeature(body);
        if (unsupported) throw new BurrowError(Code.Unimplemented, unsupported);
        // Validated before anything starts: a bad entry is a 400 and nothing was created.
        refuseIdentityTokens(body.iam);
        let network = networkFromCreate(body.network);
        if (network?.rules) network.rulesOwner = ruleSecretsOwner(ctx, request, network.rules);
        let allowInternetAccess = body.allow_internet_access;
        // A snapshot or checkpoint keeps its sandbox's egress for creates that set none of their own.
        const inherited = setsEgress(body) ? undefined : await inheritedNetwork(ctx, body.templateID);
        if (inherited) {
          network = withInheritedEgress(network, inherited.egress);
          allowInternetAccess = inherited.allowInternetAccess;
        }
        // The orchestrator enforces the rules before the sandbox is handed out (one that cannot must refuse them).
        if (hasEgressRules(network) && !ctx.orchestrator.setSandboxEgress) {
          throw new BurrowError(Code.Unimplemented, "egress rules are not supported by this orchestrator", { reason: "egress_unsupported" });
        }
        const lifecycle = lifecycleFromCreate(body);
        // Last of the checks: a bad path is a 400, an unknown volume a 404, and the volumes are held until the
        // sandbox's mounts are recorded (a volume cannot be deleted under a create).
        const mounts = ctx.volumes.reserveMounts(body.volumeMounts, { apiKeyId: request.apiKeyId });
        try {
          const row = await ctx.sandboxes.create({
            template: body.templateID,
            ...(body.timeout !== undefined ? { timeoutSec: body.timeout } : {}),
            metadata: body.metadata ?? {},
            envVars: body.envVars ?? {},
            ...(allowInternetAccess !== undefined ? { allowInternetAccess } : {}),
            ...(network ? { network } : {}),
            apiKeyId: request.apiKeyId,
            // E2B keeps the `mcp` field and the SDK itself starts the gateway in the sandbox (`mcp-gateway --config`).
            ...(body.mcp ? { mcpServers: Object.keys(body.mcp) } : {}),
            lifecycle,
            ...(mounts ? { volumeMounts: mounts.mounts, onRecorded: mounts.record } : {}),
            signal: clientGoneSignal(reply),
          });
          return reply.code(201).send(toSandbox(row, ctx.config, network));
        } finally {
          mounts?.release();
        }
      },
    );
  }
}
