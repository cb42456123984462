// E2B's lifecycle is durable: a sandbox paused by its timeout whose memory pause the orchestrator later turned into a
// filesystem pause (past BURROW_MEMORY_PAUSE_MAX_AGE_MS) keeps that kind, its lifecycle and its create timeout across
// a server SIGKILL: traffic does not wake it (a filesystem pause needs connect), connect cold-boots it with its files,
// and its next timeout pauses it again. The conversion is recorded and announced on the bus.
import { rmSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { Sandbox } from "e2b";
import { BusClient, type BusMessage } from "@burrow/sdk";
import { burrowDown, freePort, startServerProcess, stopServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { newTestInstance } from "../helpers/test-instance.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitForState(sandboxId: string, opts: object, state: "running" | "paused"): Promise<void> {
  while ((await Sandbox.getInfo(sandboxId, opts)).state !== state) await sleep(200);
}

describe("lifecycle across a restart", () => {
  const instance = newTestInstance("lcrestart");
  let server: ServerProcess | undefined;

  afterAll(async () => {
    if (server) await stopServerProcess(server, "SIGTERM");
    burrowDown(instance);
    rmSync(instance.stateDir, { recursive: true, force: true });
  });

  it("a timeout pause converted to a filesystem pause keeps its kind and lifecycle through SIGKILL", async () => {
    const port = await freePort();
    // Memory pauses become filesystem pauses after 3 s.
    const env = { BURROW_MEMORY_PAUSE_MAX_AGE_MS: "3000" };
    server = await startServerProcess(instance, port, ["--pool-size", "0"], env);
    const opts = { apiKey: server.apiKey, apiUrl: server.url, sandboxUrl: server.url, debug: false as const };
    const bus = new BusClient({ baseUrl: server.url, apiKey: server.apiKey });
    const sbx = await Sandbox.create("base", { ...opts, timeoutMs: 120_000, lifecycle: { onTimeout: "pause", autoResume: true } });
    const sub = await bus.bus.subscribe(`sbx.*.${sbx.sandboxId}.lifecycle.>`);
    const events: Array<{ type: string; reason?: string; pauseKind?: string }> = [];
    const collecting = (async () => {
      for await (const m of sub as AsyncIterable<BusMessage>) events.push(JSON.parse(m.text ?? "{}"));
    })().catch(() => undefined);
    try {
      await sbx.files.write("/home/user/kept.txt", "kept through it all");
      await sbx.setTimeout(1_000);
      await waitForState(sbx.sandboxId, opts, "paused");
      while (!events.some((e) => e.type === "pause_converted")) await sleep(200);
      expect(events.find((e) => e.type === "paused")).toMatchObject({ reason: "timeout", pauseKind: "memory" });
      expect(events.find((e) => e.type === "pause_converted")).toMatchObject({ reason: "age", pauseKind: "filesystem" });

      await stopServerProcess(server, "SIGKILL");
      server = await startServerProcess(instance, port, ["--pool-size", "0"], env);
      const again = { ...opts, apiKey: server.apiKey };
      const info = await Sandbox.getInfo(sbx.sandboxId, again);
      expect(info.state).toBe("paused");
      expect(info.lifecycle).toEqual({ onTimeout: "pause", autoResume: true });
      // Filesystem-paused: traffic is answered "paused" and does not wake it, autoResume or not.
      await expect(sbx.files.read("/home/user/kept.txt")).rejects.toThrow();
      expect((await Sandbox.getInfo(sbx.sandboxId, again)).state).toBe("paused");
      const reconnected = await Sandbox.connect(sbx.sandboxId, { ...again, timeoutMs: 120_000 });
      expect(await reconnected.files.read("/home/user/kept.txt")).toBe("kept through it all");
      expect((await reconnected.getInfo()).lifecycle).toEqual({ onTimeout: "pause", autoResume: true });
      // Its lifecycle still acts after the restart: the next timeout pauses it instead of killing it.
      await reconnected.setTimeout(1_000);
      await waitForState(sbx.sandboxId, again, "paused");
      expect((await Sandbox.getInfo(sbx.sandboxId, again)).lifecycle).toEqual({ onTimeout: "pause", autoResume: true });
      expect(await Sandbox.kill(sbx.sandboxId, again)).toBe(true);
    } finally {
      sub.close();
      await collecting;
    }
  }, 600_000);
});
