// A server killed with SIGKILL loses nothing: on restart it re-adopts the sandboxes that still run and
// reaps the ones that died meanwhile, leaving no orphaned process, cgroup, veth or writable layer.
import { execFileSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Sandbox } from "e2b";
import { burrowDown, freePort, startServerProcess, stopServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { cgroupFrozen, dirExists, leftoverCgroups, linkExists, processExists, sandboxInternals } from "../helpers/sandbox-internals.js";
import { newTestInstance } from "../helpers/test-instance.js";

describe("restart safety", () => {
  const instance = newTestInstance("restart");
  let server: ServerProcess | undefined;

  afterAll(async () => {
    if (server) await stopServerProcess(server, "SIGTERM");
    burrowDown(instance);
    const tables = execFileSync("nft", ["list", "tables"], { encoding: "utf8" });
    rmSync(instance.stateDir, { recursive: true, force: true });
    expect(tables).not.toContain(`burrow_${instance.instance}`);
  });

  it("re-adopts running sandboxes and reaps dead ones after SIGKILL", async () => {
    const port = await freePort();
    server = await startServerProcess(instance, port, ["--pool-size", "0"]);
    const opts = { apiKey: server.apiKey, apiUrl: server.url, sandboxUrl: server.url };
    const survivor = await Sandbox.create("base", { ...opts, metadata: { role: "survivor" } });
    const casualty = await Sandbox.create("base", { ...opts, metadata: { role: "casualty" } });
    await survivor.commands.run("i=0; while true; do echo $i > /tmp/counter; i=$((i+1)); sleep 0.05; done", {
      background: true,
    });
    await survivor.files.write("/home/user/kept.txt", "kept across restart");
    const survivorInside = sandboxInternals(instance.stateDir, survivor.sandboxId);
    const casualtyInside = sandboxInternals(instance.stateDir, casualty.sandboxId);

    await stopServerProcess(server, "SIGKILL");
    expect(processExists(survivorInside.pid)).toBe(true);
    const before = Number((await readCounter(survivorInside.pid)).trim());
    // A sandbox that dies while no server runs must be reaped by the next one.
    process.kill(casualtyInside.pid, "SIGKILL");
    await waitFor(() => !processExists(casualtyInside.pid));

    server = await startServerProcess(instance, port, ["--pool-size", "0"]);
    const listed = await Sandbox.list({ ...opts, apiKey: server.apiKey }).nextItems();
    expect(listed.map((s) => s.sandboxId)).toEqual([survivor.sandboxId]);

    const reconnected = await Sandbox.connect(survivor.sandboxId, opts);
    expect(await reconnected.files.read("/home/user/kept.txt")).toBe("kept across restart");
    const after = Number((await reconnected.commands.run("cat /tmp/counter")).stdout.trim());
    expect(after).toBeGreaterThan(before);

    expect(dirExists(casualtyInside.dir)).toBe(false);
    expect(linkExists(casualtyInside.hostVeth)).toBe(false);
    expect(leftoverCgroups(instance.instance, casualty.sandboxId)).toEqual([]);
    expect(await Sandbox.kill(casualty.sandboxId, opts)).toBe(false);

    expect(await Sandbox.kill(survivor.sandboxId, opts)).toBe(true);
    expect(processExists(survivorInside.pid)).toBe(false);
  });

  it("keeps a paused sandbox paused across SIGKILL and resumes it after; the store wins over the orchestrator", async () => {
    const port = await freePort();
    if (server) await stopServerProcess(server, "SIGTERM");
    server = await startServerProcess(instance, port, ["--pool-size", "0"]);
    const opts = { apiKey: server.apiKey, apiUrl: server.url, sandboxUrl: server.url };
    const paused = await Sandbox.create("base", { ...opts, metadata: { role: "paused" } });
    const running = await Sandbox.create("base", { ...opts, metadata: { role: "running" } });
    await paused.commands.run("i=0; while true; do echo $i > /tmp/counter; i=$((i+1)); sleep 0.05; done", { background: true });
    await paused.files.write("/home/user/kept.txt", "kept while paused");
    const pausedInside = sandboxInternals(instance.stateDir, paused.sandboxId);
    await waitFor(() => counterOf(pausedInside.pid) > 0);
    expect(await paused.pause()).toBe(true);
    expect(cgroupFrozen(instance.instance, paused.sandboxId)).toBe(true);
    const atPause = counterOf(pausedInside.pid);

    await stopServerProcess(server, "SIGKILL");
    expect(processExists(pausedInside.pid)).toBe(true);
    expect(cgroupFrozen(instance.instance, paused.sandboxId)).toBe(true);
    // A restart that came between the orchestrator writing "paused" and the server recording it: the server's
    // store says running, so the restarted server must bring the sandbox back to running.
    const runningDir = sandboxInternals(instance.stateDir, running.sandboxId).dir;
    const recordFile = join(runningDir, "sandbox.json");
    writeFileSync(recordFile, JSON.stringify({ ...JSON.parse(readFileSync(recordFile, "utf8")), state: "paused" }));

    server = await startServerProcess(instance, port, ["--pool-size", "0"]);
    expect(cgroupFrozen(instance.instance, paused.sandboxId)).toBe(true);
    expect(counterOf(pausedInside.pid)).toBe(atPause);
    expect((await Sandbox.getInfo(paused.sandboxId, opts)).state).toBe("paused");
    const listedPaused = await Sandbox.list({ ...opts, query: { state: ["paused"] } }).nextItems();
    expect(listedPaused.map((s) => s.sandboxId)).toEqual([paused.sandboxId]);
    expect(await paused.isRunning()).toBe(false);

    expect((await Sandbox.getInfo(running.sandboxId, opts)).state).toBe("running");
    expect(cgroupFrozen(instance.instance, running.sandboxId)).toBe(false);
    expect((await running.commands.run("echo up")).stdout.trim()).toBe("up");

    const resumed = await Sandbox.connect(paused.sandboxId, opts);
    expect(cgroupFrozen(instance.instance, paused.sandboxId)).toBe(false);
    expect(await resumed.files.read("/home/user/kept.txt")).toBe("kept while paused");
    await waitFor(() => counterOf(pausedInside.pid) > atPause);

    expect(await Sandbox.kill(paused.sandboxId, opts)).toBe(true);
    expect(await Sandbox.kill(running.sandboxId, opts)).toBe(true);
    expect(processExists(pausedInside.pid)).toBe(false);
  });
});

/** The sandbox's counter, read from the host through its root (works while frozen or with no server). */
function counterOf(pid: number): number {
  try {
    return Number(readFileSync(`/proc/${pid}/root/tmp/counter`, "utf8").trim() || "0");
  } catch {
    return 0;
  }
}

/** Read the survivor's counter from the host, through the sandbox's root (no server is running). */
async function readCounter(pid: number): Promise<string> {
  const { readFile } = await import("node:fs/promises");
  return readFile(`/proc/${pid}/root/tmp/counter`, "utf8");
}

async function waitFor(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
