// Killing a sandbox removes every trace of it on the host.
import { describe, expect, inject, it } from "vitest";
import { Sandbox } from "e2b";
import {
  dirExists,
  leftoverCgroups,
  linkExists,
  nftRulesetMentions,
  processExists,
  sandboxInternals,
} from "../helpers/sandbox-internals.js";

const env = inject("burrow");
const opts = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl };

describe("kill", () => {
  it("leaves no process, cgroup, veth, firewall entry or writable layer behind", async () => {
    const sandbox = await Sandbox.create("base", { ...opts, allowInternetAccess: true });
    await sandbox.commands.run("sleep 600", { background: true });
    await sandbox.commands.run("echo data > /home/user/file.txt");
    const inside = sandboxInternals(env.stateDir, sandbox.sandboxId);
    // Everything exists while the sandbox runs: the checks below can fail.
    expect(processExists(inside.pid)).toBe(true);
    expect(linkExists(inside.hostVeth)).toBe(true);
    expect(leftoverCgroups(env.instance, sandbox.sandboxId).length).toBeGreaterThan(0);
    expect(nftRulesetMentions(inside.ip)).toBe(true);
    expect(dirExists(inside.dir)).toBe(true);

    expect(await sandbox.kill()).toBe(true);

    expect(processExists(inside.pid)).toBe(false);
    expect(linkExists(inside.hostVeth)).toBe(false);
    expect(leftoverCgroups(env.instance, sandbox.sandboxId)).toEqual([]);
    expect(nftRulesetMentions(inside.ip)).toBe(false);
    expect(dirExists(inside.dir)).toBe(false);
    expect(await Sandbox.kill(sandbox.sandboxId, opts)).toBe(false);
  });
});
