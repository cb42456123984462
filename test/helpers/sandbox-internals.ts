// Host-side facts about a sandbox, read from the orchestrator's record, so that tests can check isolation
// and clean-up from outside.
import { existsSync, readdirSync, readFileSync, realpathSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { join } from "node:path";

export interface SandboxInternals {
  pid: number;
  ip: string;
  hostVeth: string;
  dir: string;
}

export function sandboxInternals(stateDir: string, sandboxId: string): SandboxInternals {
  const dir = join(stateDir, "sandboxes", sandboxId);
  const record = JSON.parse(readFileSync(join(dir, "sandbox.json"), "utf8")) as { pid: number; ip: string; hostVeth: string };
  return { pid: record.pid, ip: record.ip, hostVeth: record.hostVeth, dir };
}

export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export function linkExists(name: string): boolean {
  try {
    execFileSync("ip", ["link", "show", "dev", name], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** Cgroup directories of a sandbox that still exist on any hierarchy. */
export function leftoverCgroups(instance: string, sandboxId: string): string[] {
  // Only this instance's parents are looked at: a walk of the whole tree fails when another test's sandbox
  // directory vanishes under it. Hierarchies sit at the root (cgroup2 only) or one level down (v1, hybrid).
  const root = "/sys/fs/cgroup";
  const candidates = [root, ...readdirSync(root).map((h) => join(root, h))].map((h) => join(h, `burrow-${instance}`, sandboxId));
  const present = candidates.flatMap((dir) => {
    try {
      return [realpathSync(dir)]; // co-mounted controllers (cpu, cpuacct) are one directory under two names
    } catch {
      return [];
    }
  });
  return [...new Set(present)];
}

/** Whether the firewall ruleset names this address (as a whole address, not a prefix of another). */
export function nftRulesetMentions(address: string): boolean {
  const ruleset = execFileSync("nft", ["list", "ruleset"], { encoding: "utf8" });
  return new RegExp(`(^|[^0-9.])${address.replaceAll(".", "\\.")}([^0-9.]|$)`, "m").test(ruleset);
}

export function dirExists(path: string): boolean {
  return existsSync(path);
}

/** Whether the sandbox's cgroup2 directory reports itself frozen (the host's view of "paused"). */
export function cgroupFrozen(instance: string, sandboxId: string): boolean {
  for (const dir of leftoverCgroups(instance, sandboxId)) {
    let events: string;
    try {
      events = readFileSync(join(dir, "cgroup.events"), "utf8");
    } catch {
      continue;
    }
    return /^frozen 1$/m.test(events);
  }
  throw new Error(`no cgroup2 directory for ${sandboxId}`);
}
