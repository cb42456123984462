// E2B's sandbox network config, replaced live by PUT /sandboxes/{id}/network (a create passes its config to the
// sandbox service, which has the orchestrator enforce it before the sandbox is handed out). The firewall change
// comes first (one transaction in the orchestrator, a failing one leaves the old rules) and the store follows, so
// the stored config is always the one enforced. Like E2B, only a running sandbox's network can be changed: a paused
// one is a 409 (resume it first), so what a resume brings back is what was enforced when it was paused.
import type { FastifyInstance } from "fastify";
import { BurrowError, Code } from "@burrow/protocol";
import type { EgressRuleLists } from "@burrow/orchestrator";
import { egressOf, networkFromUpdate, type EgressConfig, type NetworkUpdateBody } from "../../network/network-config.js";
import { ruleSecretsOwner } from "../../network/rule-secrets.js";
import type { ApiContext } from "../context.js";
import { errorResponses, networkUpdateSchema, sandboxIdParams } from "../schemas.js";
import { strictJsonBody } from "../strict-json.js";
import { registerEgressRoutes } from "../../egress/egress-routes.js";

function egressUnsupported(): BurrowError {
  return new BurrowError(Code.Unimplemented, "egress rules are not supported by this orchestrator", { reason: "egress_unsupported" });
}

/** The network a create inherits from a snapshot or checkpoint: its sandbox's internet switch and egress. */
export interface InheritedNetwork {
  allowInternetAccess: boolean;
  egress: EgressConfig;
}

/**
 * The network a template reference carries: a snapshot's or a checkpoint's, its sandbox's when it was taken
 * (creates that set none of their own start with it). The egress is the one the control plane kept with it (lists,
 * header transforms, user's proxy), else the orchestrator's lists (taken before that was kept, or of a sandbox
 * without a network config). Undefined for other templates and unknown references.
 */
export async function inheritedNetwork(ctx: ApiContext, ref: string): Promise<InheritedNetwork | undefined> {
  const template = ctx.orchestrator.resolveTemplate(ref);
  if (template) {
    return template.egress && { allowInternetAccess: template.egress.allowInternetAccess, egress: ctx.networks.copyOf(template.templateId) ?? listsOf(template.egress) };
  }
  // Not a template: perhaps a checkpoint, which a create may name as its template.
  const checkpoint = await ctx.orchestrator.getCheckpoint?.(ref).catch(() => undefined);
  if (!checkpoint) return undefined;
  return { allowInternetAccess: checkpoint.allowInternetAccess, egress: ctx.networks.copyOf(checkpoint.checkpointId) ?? listsOf(checkpoint.egress) };
}

function listsOf(egress: EgressRuleLists | undefined): EgressConfig {
  return { allowOut: [...(egress?.allowOut ?? [])], denyOut: [...(egress?.denyOut ?? [])] };
}

export function registerNetworkRoutes(app: FastifyInstance, ctx: ApiContext): void {
  registerEgressRoutes(app, ctx);
  app.put<{ Params: { sandboxID: string }; Body: NetworkUpdateBody }>(
    "/sandboxes/:sandboxID/network",
    {
      preValidation: strictJsonBody,
      schema: {
        summary: "Replace a sandbox's network rules live (omitted allowOut/denyOut are cleared)",
        params: sandboxIdParams,
        body: networkUpdateSchema,
        response: { 204: { type: "null" }, ...errorResponses(400, 401, 404, 409, 500, 501) },
      },
    },
    async (request, reply) => {
      const { sandboxID } = request.params;
      const row = ctx.sandboxes.require(sandboxID);
      if (row.state !== "running") {
        throw new BurrowError(Code.Aborted, `Sandbox "${sandboxID}" is paused: resume it (connect) before changing its network`, { reason: "sandbox_paused" });
      }
      const next = networkFromUpdate(ctx.networks.get(sandboxID), request.body ?? {});
      if (next.rules) next.rulesOwner = ruleSecretsOwner(ctx, request, next.rules);
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
