// Host-side facts about a sandbox, read from the orchestrator's record, so that tests can check isolation
// and clean-up from outside.
import { existsSync, readFileSync } from "node:fs";
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
  const out = execFileSync("find", ["/sys/fs/cgroup", "-maxdepth", "6", "-type", "d", "-name", sandboxId], {
    encoding: "utf8",
  });
  return out.split("\n").filter((line) => line.includes(`burrow-${instance}`));
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
