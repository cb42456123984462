// Egress rules as they were written before `proxied` existed: the control plane then said "send this sandbox's
// 80/443 through the egress proxy" (header transforms) and "and every TCP port through its user's proxy" by adding
// reserved `.invalid` names to denyOut. Sandbox records, checkpoint records and snapshot manifests written then still
// carry them, and must come back after an upgrade exactly as they were enforced: the three readers of those files
// (readRecord, readCheckpointRecord, templateInfoWithEgress) read them here as the field they meant. Nothing writes
// these names any more, and rules from the control plane are never read this way: there a name is just a name.
import type { EgressProxying } from "./egress-rules.js";

const LEGACY_INSPECT = "transforms.burrow.invalid";
const LEGACY_TUNNEL = "egress-proxy.burrow.invalid";

interface RuleInput {
  allowOut?: readonly string[];
  denyOut?: readonly string[];
  proxied?: EgressProxying;
}

/** The rules without the old entries, with the proxying they stood for (the wider of the two, and of `proxied`). */
export function upgradeLegacyRules<R extends RuleInput>(rules: R): R {
  const denyOut = rules.denyOut;
  if (!denyOut || !denyOut.some((e) => isLegacy(e))) return rules;
  const had = new Set(denyOut.map((e) => e.trim().toLowerCase()));
  const implied: EgressProxying = had.has(LEGACY_TUNNEL) ? "tunnel" : "inspect";
  const proxied = rules.proxied === "tunnel" || implied === "tunnel" ? "tunnel" : implied;
  return { ...rules, denyOut: denyOut.filter((e) => !isLegacy(e)), proxied };
}

function isLegacy(entry: string): boolean {
  const e = entry.trim().toLowerCase();
  return e === LEGACY_INSPECT || e === LEGACY_TUNNEL;
}
