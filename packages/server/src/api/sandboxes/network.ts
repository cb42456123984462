// E2B's sandbox network config, replaced live by PUT /sandboxes/{id}/network (a create passes its config to the
// sandbox service, which has the orchestrator enforce it before the sandbox is handed out). The firewall change
// comes first (one transaction in the orchestrator, a failing one leaves the old rules) and the store follows, so
// the stored config is always the one enforced. Like E2B, only a running sandbox's network can be changed: a paused
// one is a 409 (resume it first), so what a resume brings back is what was enforced when it was paused.
import type { FastifyInstance } from "fastify";
import { BurrowError, Code } from "@burrow/protocol";
import type { SandboxEgress } from "@burrow/orchestrator";
import { egressOf, networkFromUpdate, type NetworkUpdateBody } from "../../network/network-config.js";
import { ruleSecretsOwner } from "../../network/rule-secrets.js";
import type { ApiContext } from "../context.js";
import { errorResponses, networkUpdateSchema, sandboxIdParams } from "../schemas.js";
import { strictJsonBody } from "../strict-json.js";
import { registerEgressRoutes } from "../../egress/egress-routes.js";

function egressUnsupported(): BurrowError {
  return new BurrowError(Code.Unimplemented, "egress rules are not supported by this orchestrator", { reason: "egress_unsupported" });
}

/**
 * The egress a template reference carries: a snapshot's or a checkpoint's, its sandbox's when it was taken
 * (creates that set none of their own start with it). Undefined for other templates and unknown references.
 */
export async function inheritedEgress(ctx: ApiContext, ref: string): Promise<SandboxEgress | undefined> {
  const template = ctx.orchestrator.resolveTemplate(ref);
  if (template) return template.egress;
  // Not a template: perhaps a checkpoint, which a create may name as its template.
  const checkpoint = await ctx.orchestrator.getCheckpoint?.(ref).catch(() => undefined);
  if (!checkpoint) return undefined;
  return { allowInternetAccess: checkpoint.allowInternetAccess, allowOut: [...(checkpoint.egress?.allowOut ?? [])], denyOut: [...(checkpoint.egress?.denyOut ?? [])] };
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
