// Setting a sandbox's egress (allowOut/denyOut, proxying and the internet switch) live: the firewall first, in one
// transaction, then the record, so that what the record says is what the kernel enforces (or will, at the next
// cold boot of a filesystem-paused sandbox, whose address and firewall elements its attachment keeps).
import { BurrowError, Code } from "@burrow/protocol";
import { hasEgressRules, normalizeEgressRules, type EgressRules } from "./network/egress-rules.js";
import { NetworkError } from "./network/network-error.js";
import type { EgressRuleLists, SandboxEgress, SandboxRecord } from "./orchestrator-api.js";
import type { SandboxOpQueue } from "./sandbox-op-queue.js";
import { writeRecord } from "./sandbox-record.js";

export function setSandboxEgress(
  ops: SandboxOpQueue,
  sandboxId: string,
  egress: SandboxEgress,
  signal?: AbortSignal,
): Promise<SandboxRecord | undefined> {
  const rules = egressRulesOf(egress);
  // In the sandbox's operation queue: a pause or cold boot under way finishes first and sees the new record.
  return ops.run(sandboxId, async (sandbox) => {
    await sandbox.network.setEgress(egress.allowInternetAccess, rules, signal);
    sandbox.record = {
      ...sandbox.record,
      allowInternetAccess: egress.allowInternetAccess,
      egress: hasEgressRules(rules) ? rules : undefined,
    };
    await writeRecord(sandbox.dir, sandbox.record);
  });
}

/** allowOut/denyOut and proxying in canonical form; malformed entries are InvalidArgument naming them. */
export function egressRulesOf(lists: EgressRuleLists): EgressRules {
  try {
    return normalizeEgressRules(lists);
  } catch (err) {
    if (err instanceof NetworkError && err.code === "invalid_argument") {
      throw new BurrowError(Code.InvalidArgument, err.message.replace(/^\[invalid_argument\] /, ""), { reason: "invalid_egress_rule" });
    }
    throw err;
  }
}
