// Filesystem pauses with real sandboxes: a halted sandbox holds no process, cgroup or veth but keeps its files and
// address; resume cold-boots it (new boot id, same envd token and env vars, the template's start command again);
// a memory pause keeps the boot id; memory pauses become filesystem pauses by age and when their processes did
// not survive (a simulated host reboot), and paused sandboxes of both kinds survive a new orchestrator.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { envdRuntimeFiles } from "@burrow/envd";
import { envdAt, runProcess } from "../src/envd-client/index.js";
import { LocalOrchestrator } from "../src/local-orchestrator.js";
import type { SandboxLifecycleEvent, SandboxRecord } from "../src/orchestrator-api.js";
import type { SandboxRecordFile } from "../src/sandbox-record.js";
import { POLL } from "./helpers/poll.js";

const TOKEN = "fs-pause-test-token";
const START_LOG = "/home/user/starts.log";

function newInstance() {
  const tag = Math.floor(Math.random() * 0xffff).toString(16);
  const routes = execFileSync("ip", ["-4", "route", "show"], { encoding: "utf8" });
  const taken = new Set([...routes.matchAll(/^10\.(\d+)\./gm)].map((m) => Number(m[1])));
  const octet = [...Array(50).keys()].map((i) => 200 + ((i + Number.parseInt(tag, 16)) % 50)).find((o) => !taken.has(o));
  if (octet === undefined) throw new Error("no free subnet");
  return { stateDir: execFileSync("mktemp", ["-d", "/var/tmp/burrow-fspause-XXXXXX"], { encoding: "utf8" }).trim(), instance: `fp${tag}`, subnet: `10.${octet}.0.0/16` };
}

const test = newInstance();

function open(memoryPauseMaxAgeMs = 60 * 60 * 1000): Promise<LocalOrchestrator> {
  return LocalOrchestrator.create({
    config: {
      stateDir: test.stateDir,
      instance: test.instance,
      subnet: test.subnet,
      pool: { template: "base", size: 0 },
      registries: { insecure: [], mirrors: {}, allowPublic: false },
      memoryPauseMaxAgeMs,
    },
    envd: envdRuntimeFiles(),
  });
}

/** Run a shell script in the sandbox through envd with the create's token; its stdout. */
async function sh(sandbox: SandboxRecord, script: string, token = TOKEN): Promise<string> {
  let out = "";
  const result = await runProcess(envdAt(sandbox.address, token), { cmd: "/bin/sh", args: ["-c", script], user: "user" }, (stream, data) => {
    if (stream === "stdout") out += Buffer.from(data).toString("utf8");
  });
  expect(result.exitCode).toBe(0);
  return out.trim();
}

function recordOf(sandboxId: string): SandboxRecordFile {
  return JSON.parse(readFileSync(join(test.stateDir, "sandboxes", sandboxId, "sandbox.json"), "utf8")) as SandboxRecordFile;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function cgroupDirs(sandboxId: string): string[] {
  const out = execFileSync("find", ["/sys/fs/cgroup", "-maxdepth", "6", "-type", "d", "-name", sandboxId], { encoding: "utf8" });
  return out.split("\n").filter((line) => line.includes(`burrow-${test.instance}`));
}

function nftMentions(address: string): boolean {
  const ruleset = execFileSync("nft", ["list", "ruleset"], { encoding: "utf8" });
  return new RegExp(`(^|[^0-9.])${address.replaceAll(".", "\\.")}([^0-9.]|$)`, "m").test(ruleset);
}

const hostBootId = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();

describe("filesystem pause and cold boot", () => {
  let orchestrator: LocalOrchestrator;
  let template: string;

  beforeAll(async () => {
    orchestrator = await open();
    const built = await orchestrator.templateBuilder.buildAndWait("fs-pause-start", {
      fromTemplate: "base",
      steps: [],
      // Each boot leaves a line: the start command ran again when there is one more.
      startCmd: `echo "$(cat /proc/sys/kernel/random/boot_id) $GREETING" >> ${START_LOG}; exec sleep infinity`,
      readyCmd: `test -s ${START_LOG}`,
      force: false,
    });
    template = built.templateId;
  }, 600_000);

  afterAll(async () => {
    await orchestrator?.shutdown();
    await rm(test.stateDir, { recursive: true, force: true });
    expect(execFileSync("nft", ["list", "tables"], { encoding: "utf8" })).not.toContain(`burrow_${test.instance}`);
  }, 120_000);

  it("frees processes, cgroups and the veth, keeps files and address; resume boots with a new boot id", async () => {
    const created = await orchestrator.createSandbox({
      template,
      envVars: { GREETING: "hello" },
      envdAccessToken: TOKEN,
      allowInternetAccess: false,
    });
    expect(created.bootId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(await sh(created, "cat /proc/sys/kernel/random/boot_id")).toBe(created.bootId);
    expect(created.bootId).not.toBe(hostBootId);
    // The sandbox cannot write its boot id (it is the kernel's file to everyone inside).
    expect(await sh(created, "echo x > /proc/sys/kernel/random/boot_id 2>/dev/null && echo wrote || echo refused")).toBe("refused");
    await sh(created, "echo kept > /home/user/kept.txt");
    const before = recordOf(created.sandboxId);
    expect(cgroupDirs(created.sandboxId).length).toBeGreaterThan(0);

    const paused = await orchestrator.pauseSandbox(created.sandboxId, { memory: false });
    expect(paused?.state).toBe("paused");
    expect(paused?.pause?.kind).toBe("filesystem");
    expect(paused?.address).toBe(created.address);
    expect(alive(before.pid)).toBe(false);
    expect(cgroupDirs(created.sandboxId)).toEqual([]);
    expect(existsSync(`/sys/class/net/${before.hostVeth}`)).toBe(false);
    expect(recordOf(created.sandboxId).pause?.kind).toBe("filesystem");
    // The address stays leased with its firewall elements.
    expect(nftMentions(created.address)).toBe(true);
    const metrics = await orchestrator.sampleMetrics(created.sandboxId);
    expect(metrics?.memUsed).toBe(0);
    // Pausing again the same way changes nothing.
    expect((await orchestrator.pauseSandbox(created.sandboxId, { memory: false }))?.pause?.kind).toBe("filesystem");

    const resumed = await orchestrator.resumeSandbox(created.sandboxId);
    expect(resumed?.state).toBe("running");
    expect(resumed?.pause).toBeUndefined();
    expect(resumed?.address).toBe(created.address);
    expect(resumed?.bootId).not.toBe(created.bootId);
    const inside = resumed as SandboxRecord;
    expect(await sh(inside, "cat /proc/sys/kernel/random/boot_id")).toBe(resumed?.bootId);
    expect(await sh(inside, "cat /home/user/kept.txt")).toBe("kept");
    expect(await sh(inside, "echo $GREETING")).toBe("hello");
    // The start command ran once per boot, the second time in the new boot with the create's env vars.
    expect((await sh(inside, `cat ${START_LOG}`)).split("\n")).toEqual([`${created.bootId} hello`, `${resumed?.bootId} hello`]);
    // envd took the create's token again, and only it.
    await expect(sh(inside, "true", "not-the-token")).rejects.toThrow();
    expect(alive(recordOf(created.sandboxId).pid)).toBe(true);
    expect(await orchestrator.killSandbox(created.sandboxId)).toBe(true);
  }, 180_000);

  it("keeps the boot id over a memory pause; resume with memory:false reboots; kill of a halted one removes everything", async () => {
    const created = await orchestrator.createSandbox({ template: "base", envVars: {}, envdAccessToken: TOKEN, allowInternetAccess: false });
    const paused = await orchestrator.pauseSandbox(created.sandboxId);
    expect(paused?.pause?.kind).toBe("memory");
    const resumed = await orchestrator.resumeSandbox(created.sandboxId);
    expect(resumed?.bootId).toBe(created.bootId);
    expect(await sh(created, "cat /proc/sys/kernel/random/boot_id")).toBe(created.bootId);

    await orchestrator.pauseSandbox(created.sandboxId);
    const rebooted = await orchestrator.resumeSandbox(created.sandboxId, { memory: false });
    expect(rebooted?.state).toBe("running");
    expect(rebooted?.bootId).not.toBe(created.bootId);
    expect(await sh(created, "cat /proc/sys/kernel/random/boot_id")).toBe(rebooted?.bootId);

    // A memory pause paused again without memory is converted.
    await orchestrator.pauseSandbox(created.sandboxId);
    const converted = await orchestrator.pauseSandbox(created.sandboxId, { memory: false });
    expect(converted?.pause?.kind).toBe("filesystem");
    const dir = join(test.stateDir, "sandboxes", created.sandboxId);
    expect(await orchestrator.killSandbox(created.sandboxId)).toBe(true);
    expect(existsSync(dir)).toBe(false);
    expect(nftMentions(created.address)).toBe(false);
    expect(orchestrator.getSandbox(created.sandboxId)).toBeUndefined();
  }, 180_000);

  it("keeps paused sandboxes of both kinds across a new orchestrator; a host reboot turns memory pauses into filesystem pauses", async () => {
    const fsPaused = await orchestrator.createSandbox({ template: "base", envVars: { K: "fs" }, envdAccessToken: TOKEN, allowInternetAccess: false });
    const memPaused = await orchestrator.createSandbox({ template: "base", envVars: { K: "mem" }, envdAccessToken: TOKEN, allowInternetAccess: false });
    await sh(fsPaused, "echo one > /home/user/f.txt");
    await sh(memPaused, "echo two > /home/user/f.txt");
    await orchestrator.pauseSandbox(fsPaused.sandboxId, { memory: false });
    await orchestrator.pauseSandbox(memPaused.sandboxId);

    // A new orchestrator on the same state directory (the old one gone as after a SIGKILL: nothing torn down).
    await orchestrator.close();
    orchestrator = await open();
    expect(orchestrator.getSandbox(fsPaused.sandboxId)?.pause?.kind).toBe("filesystem");
    expect(orchestrator.getSandbox(memPaused.sandboxId)?.pause?.kind).toBe("memory");
    expect(alive(recordOf(memPaused.sandboxId).pid)).toBe(true);
    expect(cgroupDirs(fsPaused.sandboxId)).toEqual([]);

    // A host reboot: every sandbox process and cgroup gone, the firewall tables too.
    await orchestrator.close();
    for (const id of readdirSync(join(test.stateDir, "sandboxes"))) {
      for (const dir of cgroupDirs(id)) {
        if (existsSync(join(dir, "cgroup.kill"))) execFileSync("sh", ["-c", `echo 1 > ${dir}/cgroup.kill`]);
      }
      await vi.waitFor(() => expect(alive(recordOf(id).pid)).toBe(false), POLL);
      for (const dir of cgroupDirs(id).reverse()) execFileSync("rmdir", [dir]);
    }
    execFileSync("nft", ["delete", "table", "inet", `burrow_${test.instance}`]);
    execFileSync("nft", ["delete", "table", "bridge", `burrow_${test.instance}`]);

    orchestrator = await open(1500);
    const events: SandboxLifecycleEvent[] = [];
    orchestrator.onSandboxLifecycleEvent((event) => events.push(event));
    expect(events).toEqual([
      { type: "pause_converted", sandboxId: memPaused.sandboxId, from: "memory", to: "filesystem", reason: "host_restart", at: expect.any(Date) },
    ]);
    expect(orchestrator.getSandbox(memPaused.sandboxId)?.pause?.kind).toBe("filesystem");
    expect(orchestrator.getSandbox(fsPaused.sandboxId)?.pause?.kind).toBe("filesystem");
    for (const [sandbox, text] of [
      [fsPaused, "one"],
      [memPaused, "two"],
    ] as const) {
      const resumed = await orchestrator.resumeSandbox(sandbox.sandboxId);
      expect(resumed?.bootId).not.toBe(sandbox.bootId);
      expect(resumed?.address).toBe(sandbox.address);
      expect(await sh(sandbox, "cat /home/user/f.txt; echo $K")).toBe(`${text}\n${sandbox === fsPaused ? "fs" : "mem"}`);
    }

    // By age: a memory pause older than the limit (1.5 s here) becomes a filesystem pause on its own.
    await orchestrator.pauseSandbox(memPaused.sandboxId);
    const pid = recordOf(memPaused.sandboxId).pid;
    await vi.waitFor(() => expect(events).toHaveLength(2), { ...POLL, timeout: 30_000 });
    expect(events[1]).toMatchObject({ type: "pause_converted", sandboxId: memPaused.sandboxId, reason: "age" });
    expect(orchestrator.getSandbox(memPaused.sandboxId)?.pause?.kind).toBe("filesystem");
    expect(alive(pid)).toBe(false);
    await orchestrator.killSandbox(memPaused.sandboxId);
    await orchestrator.killSandbox(fsPaused.sandboxId);
  }, 300_000);
});
