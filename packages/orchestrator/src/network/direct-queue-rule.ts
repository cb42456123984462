// The one iptables-nft rule of the direct path (direct-ruleset.ts): packets from the instance's bridge marked QUEUE
// go to the egress judge's NFQUEUE. This kernel has xt NFQUEUE but no nft `queue` expression, and nft cannot write
// xt expressions, so this rule lives in iptables' own `ip mangle` table (FORWARD, priority -150: after the marking
// chain at -200, before the instance's forward chain at -10). No --queue-bypass: without a reader the packets are
// dropped. The rule names the bridge, so instances on one host each have their own; replacing it (a restarted
// server binds its queue anew) removes the instance's earlier ones first. iptables-nft creates `ip mangle` and its
// FORWARD chain for the first rule; the last instance to remove its rule removes them again (when nothing else is in
// them). Changes are made holding a lock (LOCK, util-linux's flock), so that one instance removing the empty table
// cannot take another's rule added in between.
import type { CommandRunner } from "../reaper/run-command.js";
import { DIRECT_MARKS } from "./direct-ruleset.js";
import { exec } from "./exec.js";

const IPTABLES = "iptables-nft";
/** Held around every change of the rules (a file in the standard lock directory, tmpfs). */
const LOCK = "/run/lock/burrow-egress-queue.lock";

/** `cmd args` run while holding LOCK. */
function locked(run: CommandRunner, cmd: string, args: readonly string[], signal?: AbortSignal): Promise<string> {
  return exec("flock", [LOCK, cmd, ...args], { signal }, run);
}
const mark = `0x${DIRECT_MARKS.queue.toString(16)}/0x${DIRECT_MARKS.queue.toString(16)}`;

function ruleArgs(bridge: string, queue: number): string[] {
  return ["-i", bridge, "-m", "mark", "--mark", mark, "-j", "NFQUEUE", "--queue-num", String(queue)];
}

/** The instance's queue rules now in the table, as `iptables -S` prints them (without the leading `-A FORWARD`). */
async function currentRules(run: CommandRunner, bridge: string, signal?: AbortSignal): Promise<string[][]> {
  const out = await exec(IPTABLES, ["-w", "-t", "mangle", "-S", "FORWARD"], { signal }, run).catch(() => "");
  return out
    .split("\n")
    .map((line) => line.trim().split(/\s+/))
    .filter((words) => words[0] === "-A" && words[1] === "FORWARD" && words.includes("NFQUEUE") && words[words.indexOf("-i") + 1] === bridge)
    .map((words) => words.slice(2));
}

/** Make `queue` the judge's queue for `bridge`'s packets (the instance's earlier rules go). */
export async function installQueueRule(run: CommandRunner, bridge: string, queue: number, signal?: AbortSignal): Promise<void> {
  for (const args of await currentRules(run, bridge, signal)) await locked(run, IPTABLES, ["-w", "-t", "mangle", "-D", "FORWARD", ...args], signal);
  await locked(run, IPTABLES, ["-w", "-t", "mangle", "-A", "FORWARD", ...ruleArgs(bridge, queue)], signal);
}

/**
 * Remove the instance's queue rules, then the FORWARD chain and the `ip mangle` table when nothing else is in them
 * (iptables-nft made them for these rules; another instance's rule, or anyone else's, keeps them).
 */
export async function removeQueueRules(run: CommandRunner, bridge: string, signal?: AbortSignal): Promise<void> {
  for (const args of await currentRules(run, bridge, signal)) await locked(run, IPTABLES, ["-w", "-t", "mangle", "-D", "FORWARD", ...args], signal);
  // `nft delete chain` refuses a chain that still has rules; the table goes only when no chain is left in it.
  await locked(run, "sh", ["-c", EMPTY_MANGLE_GOES], signal).catch(() => undefined);
}

const EMPTY_MANGLE_GOES = `nft list table ip mangle >/dev/null 2>&1 || exit 0
nft delete chain ip mangle FORWARD 2>/dev/null
nft list table ip mangle | grep -q "chain " || nft delete table ip mangle`;
