// The secrets a sandbox's header transforms name are the caller's team's, checked when the rules are set (400
// naming a missing one) and resolved under the same owner at egress, whoever set them.
import type { FastifyRequest } from "fastify";
import type { ApiContext } from "../api/context.js";
import { ownerOf } from "../api/secrets/index.js";
import { requireRuleSecrets, type NetworkRules } from "./network-rules.js";

/** The owner id to keep with the rules; throws InvalidArgument when a placeholder names no secret of the team. */
export function ruleSecretsOwner(ctx: Pick<ApiContext, "secrets">, request: FastifyRequest, rules: NetworkRules): number {
  const owner = ownerOf(request);
  requireRuleSecrets(rules, (name) => ctx.secrets.hasName(owner, name));
  return owner.apiKeyId;
}
