// Real-kernel tests of sandbox cgroups. Every process here is a child of this test, moved into a cgroup
// by writing its pid, and killed by pid; every cgroup lives under burrow-<random instance>.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { BurrowError, Code } from "@burrow/protocol";
import { type BurrowCgroupManager, createCgroupManager } from "../src/cgroups/index.js";
import type { SandboxCgroup } from "../src/types.js";
import { POLL } from "./helpers/poll.js";

const instance = `t${randomBytes(4).toString("hex")}`;
const LIMITS = { cpuCount: 1, memoryMB: 64, diskMB: 0, pids: 256 };
const children: ChildProcess[] = [];
const opened: SandboxCgroup[] = [];

/** Start `node -e script`; it waits for a line on stdin before doing anything, so it can be moved first. */
function startWaiting(script: string): ChildProcess {
  const child = spawn(process.execPath, ["-e", `process.stdin.once("data",()=>{${script}})`], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  children.push(child);
  return child;
}

/**
 * Start `args` as the init of a new pid namespace, like a sandbox. The sandbox's processes die with their
 * init and the kernel reaps them; only `unshare` (outside the cgroup, our child) is left to reap here.
 * Nothing escapes to the host's pid 1, which on these machines never reaps orphans.
 */
async function startInPidns(args: string[]): Promise<{ outer: ChildProcess; init: number }> {
  // stderr ignored: unshare reports "sigprocmask unblock failed" when re-raising its child's SIGKILL.
  const outer = spawn("unshare", ["--pid", "--fork", ...args], { stdio: ["pipe", "pipe", "ignore"] });
  children.push(outer);
  const file = `/proc/${outer.pid}/task/${outer.pid}/children`;
  const init = await vi.waitFor(() => {
    const pid = Number((existsSync(file) ? readFileSync(file, "utf8") : "").trim().split(" ")[0] || 0);
    if (pid <= 0) throw new Error("the namespace's init has not started yet");
    return pid;
  }, POLL);
  return { outer, init };
}

function moveInto(cg: SandboxCgroup, pid: number): void {
  for (const dir of cg.procsPaths) writeFileSync(join(dir, "cgroup.procs"), String(pid));
}

function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
}

/** Lines the child printed, as they arrive. */
function lines(child: ChildProcess): string[] {
  const seen: string[] = [];
  let partial = "";
  child.stdout?.on("data", (d: Buffer) => {
    const parts = (partial + d.toString()).split("\n");
    partial = parts.pop() ?? "";
    seen.push(...parts);
  });
  return seen;
}

/** The OOM-kill counter of the sandbox's memory cgroup, on v1 or v2. */
function oomKills(cg: SandboxCgroup): number {
  for (const dir of cg.procsPaths) {
    for (const file of ["memory.oom_control", "memory.events"]) {
      const path = join(dir, file);
      if (!existsSync(path)) continue;
      const m = /^oom_kill (\d+)$/m.exec(readFileSync(path, "utf8"));
      if (m) return Number(m[1]);
    }
  }
  throw new Error("no memory cgroup among the sandbox's directories");
}

function pidsFile(cg: SandboxCgroup, name: string): string {
  const dir = cg.procsPaths.find((d) => existsSync(join(d, name)));
  if (dir === undefined) throw new Error(`no ${name}`);
  return readFileSync(join(dir, name), "utf8").trim();
}

describe("cgroup manager (real kernel)", () => {
  let cm: BurrowCgroupManager;
  let parents: string[] = [];

  beforeAll(async () => {
    cm = await createCgroupManager({ instance });
    const probe = await cm.open("probe");
    parents = probe.procsPaths.map((p) => join(p, ".."));
    await probe.destroy();
  });

  afterAll(async () => {
    for (const c of children) {
      if (c.exitCode === null && c.signalCode === null && c.pid !== undefined) {
        try {
          process.kill(c.pid, "SIGKILL");
        } catch {
          // Already gone.
        }
      }
    }
    await Promise.all(children.map(exited));
    for (const cg of opened) {
      await cg.killAll().catch(() => {});
      await cg.destroy().catch(() => {});
    }
    await cm?.close();
  });

  async function open(id: string): Promise<SandboxCgroup> {
    const cg = await cm.open(id);
    opened.push(cg);
    return cg;
  }

  it("nests every sandbox under this process's own cgroup in each hierarchy", async () => {
    const cg = await open("nest");
    const own = readFileSync("/proc/self/cgroup", "utf8");
    expect(["v1", "v2", "hybrid"]).toContain(cm.layout);
    expect(cg.procsPaths.length).toBeGreaterThan(0);
    for (const dir of cg.procsPaths) {
      expect(dir.endsWith(`/burrow-${instance}/nest`)).toBe(true);
      expect(existsSync(join(dir, "cgroup.procs"))).toBe(true);
    }
    // The memory cgroup sits below ours (on these machines a non-root v1 memory cgroup).
    const memoryPath = /^\d+:[^:]*\bmemory\b[^:]*:(.*)$/m.exec(own)?.[1];
    if (memoryPath !== undefined) {
      expect(cg.procsPaths.some((d) => d.includes(`${memoryPath === "/" ? "" : memoryPath}/burrow-${instance}/nest`))).toBe(true);
    }
    await expect(cm.open("../escape")).rejects.toMatchObject({ code: Code.InvalidArgument });
  });

  it("OOM-kills a process that allocates beyond the memory limit", async () => {
    const cg = await open("oom");
    await cg.setLimits({ ...LIMITS, memoryMB: 48 });
    expect((await cg.sample()).memoryLimitBytes).toBe(48 * 1024 * 1024);
    const before = oomKills(cg);
    // Allocates and touches 8 MiB at a time, at most 512 MiB: without a limit it would exit 0.
    const child = startWaiting(
      'const k=[];for(let i=1;i<=64;i++){k.push(Buffer.alloc(8<<20,1));console.log(i*8)}process.exit(0)',
    );
    const out = lines(child);
    moveInto(cg, child.pid ?? 0);
    expect(await cg.pids()).toContain(child.pid);
    child.stdin?.write("go\n");
    const { code, signal } = await exited(child);
    expect({ code, signal }).toEqual({ code: null, signal: "SIGKILL" });
    expect(out.length).toBeGreaterThan(0); // it did allocate before dying…
    expect(Number(out.at(-1))).toBeLessThan(512); // …but not everything
    expect(oomKills(cg)).toBeGreaterThan(before);
  });

  it("holds a bounded fork loop at pids.max", async () => {
    const cg = await open("pids");
    await cg.setLimits(LIMITS);
    // 40 attempts to start `sleep 60`; reports how many started and how many the kernel refused.
    const { outer, init } = await startInPidns([
      process.execPath,
      "-e",
      'process.stdin.once("data",()=>{const {spawn}=require("child_process");let ok=0,fail=0;' +
        'for(let i=0;i<40;i++){try{const c=spawn("sleep",["60"]);c.on("error",()=>{fail++});if(c.pid)ok++;else fail++}catch{fail++}}' +
        'setTimeout(()=>console.log(ok+" "+fail),500)})',
    ]);
    const out = lines(outer);
    moveInto(cg, init);
    // Room for exactly 8 more tasks than the node process already has (its threads count too).
    const current = Number(pidsFile(cg, "pids.current"));
    await cg.setLimits({ ...LIMITS, pids: current + 8 });
    outer.stdin?.write("go\n");
    await expect.poll(() => out.length, { ...POLL, message: "the fork loop's report" }).toBeGreaterThan(0);
    const [ok, fail] = (out[0] ?? "").split(" ").map(Number);
    expect(ok).toBeLessThanOrEqual(8);
    expect(fail).toBeGreaterThan(0);
    expect(Number(pidsFile(cg, "pids.current"))).toBeLessThanOrEqual(current + 8);
    await cg.killAll();
    expect(await cg.pids()).toEqual([]);
    await exited(outer);
  });

  it("freezes a busy counter and thaws it where it stopped", async () => {
    const cg = await open("freeze");
    await cg.setLimits(LIMITS);
    const child = startWaiting('let n=0;for(;;){n++;if(n%2e6===0)process.stdout.write(n+"\\n")}');
    const out = lines(child);
    moveInto(cg, child.pid ?? 0);
    child.stdin?.write("go\n");
    await expect.poll(() => out.length, { ...POLL, message: "the counter to run" }).toBeGreaterThanOrEqual(2);

    await cg.freeze();
    const cpuFrozen = (await cg.sample()).cpuUsageNs;
    await sleep(300);
    expect((await cg.sample()).cpuUsageNs).toBe(cpuFrozen); // not a single ns of CPU while frozen
    const lastBeforeThaw = Number(out.at(-1));
    const seenBeforeThaw = out.length;

    await cg.thaw();
    await expect.poll(() => out.length, { ...POLL, message: "the counter to resume" }).toBeGreaterThan(seenBeforeThaw + 1);
    expect(Number(out[seenBeforeThaw])).toBe(lastBeforeThaw + 2e6); // continues from memory, no restart
    expect((await cg.sample()).cpuUsageNs).toBeGreaterThan(cpuFrozen);
    await cg.killAll();
  });

  it("killAll empties a cgroup of several processes, destroy removes it, list tracks it", async () => {
    const cg = await open("killall");
    const { outer, init } = await startInPidns(["sh", "-c", "read x; for i in 1 2 3 4 5; do sleep 600 & done; wait"]);
    moveInto(cg, init);
    outer.stdin?.write("go\n");
    await expect.poll(() => readFileSync(join(cg.procsPaths[0] ?? "", "cgroup.procs"), "utf8").trim().split("\n").length, POLL).toBe(6);
    const pids = await cg.pids();
    expect(pids).toHaveLength(6);
    expect(await cm.list()).toContain("killall");

    await cg.killAll();
    expect(await cg.pids()).toEqual([]);
    await exited(outer);
    for (const pid of pids) expect(existsSync(`/proc/${pid}`)).toBe(false); // dead and reaped

    await cg.destroy();
    await cg.destroy(); // missing dirs are fine
    for (const dir of cg.procsPaths) expect(existsSync(dir)).toBe(false);
    expect(await cm.list()).not.toContain("killall");
  });

  it("finds sandboxes again after a restart, and close() keeps parents that are in use", async () => {
    const a = await open("relist-a");
    await open("relist-b");
    const restarted = await createCgroupManager({ instance });
    expect(await restarted.list()).toEqual(expect.arrayContaining(["relist-a", "relist-b"]));
    const again = await restarted.open("relist-a");
    expect(again.procsPaths).toEqual(a.procsPaths);
    await restarted.close();
    for (const p of parents) expect(existsSync(p)).toBe(true);
  });

  it("honours an aborted signal in killAll", async () => {
    const cg = await open("abort");
    const ac = new AbortController();
    ac.abort();
    const err = await cg.killAll(ac.signal).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BurrowError);
    expect((err as BurrowError).code).toBe(Code.Canceled);
  });

  it("close() removes the instance parents once every sandbox is gone", async () => {
    for (const cg of opened) {
      await cg.killAll();
      await cg.destroy();
    }
    expect(await cm.list()).toEqual([]);
    await cm.close();
    for (const p of parents) expect(existsSync(p)).toBe(false);
  });
});
