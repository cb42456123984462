// The sandbox host's removal of ended sandboxes' directories: a directory that will not go is logged and kept for
// a later attempt (never thrown at the kill that ended the sandbox), and the retry removes it once it can.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Logger } from "../src/logger.js";
import { SandboxHost, type SandboxHostDeps } from "../src/sandbox-host.js";
import { buildDeepTreeOnHost } from "../../../test/helpers/deep-tree.js";

let work: string;
const errors: string[] = [];
const logger: Logger = { info() {}, debug() {}, warn() {}, error: (_obj, msg) => void errors.push(msg ?? "") };
// Removing directories needs nothing of the host but its logger.
const host = new SandboxHost({ logger } as SandboxHostDeps);

beforeEach(async () => {
  work = await mkdtemp("/var/tmp/burrow-sandbox-dir-");
  errors.length = 0;
});

afterEach(() => {
  const mountPoints = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((line) => line.split(" ")[4] ?? "")
    .filter((mountPoint) => mountPoint.startsWith(`${work}/`));
  for (const mountPoint of mountPoints) execFileSync("umount", [mountPoint]);
  execFileSync("rm", ["-rf", "--one-file-system", "--", work]);
});

describe("SandboxHost.removeDir", () => {
  it("removes a sandbox directory holding a tree deeper than PATH_MAX", async () => {
    const dir = join(work, "sandbox-a");
    buildDeepTreeOnHost(join(dir, "upper", "home"));
    await host.removeDir("sandbox-a", dir);
    expect(existsSync(dir)).toBe(false);
    expect(host.pendingRemovals).toBe(0);
    expect(errors).toEqual([]);
  });

  it("keeps a directory it cannot remove for retryRemovals instead of throwing, and the retry removes it", async () => {
    const dir = join(work, "sandbox-b");
    const mountPoint = join(dir, "held");
    mkdirSync(mountPoint, { recursive: true });
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "burrow-test", mountPoint]);
    writeFileSync(join(mountPoint, "precious"), "x");

    await host.removeDir("sandbox-b", dir);

    expect(existsSync(dir)).toBe(true);
    expect(host.pendingRemovals).toBe(1);
    expect(errors).toEqual(["could not remove the directory of an ended sandbox; will retry"]);
    // Still held: the retry fails the same way and keeps it.
    await host.retryRemovals();
    expect(host.pendingRemovals).toBe(1);
    expect(readFileSync(join(mountPoint, "precious"), "utf8")).toBe("x");

    execFileSync("umount", [mountPoint]);
    await host.retryRemovals();

    expect(existsSync(dir)).toBe(false);
    expect(host.pendingRemovals).toBe(0);
  });
});
