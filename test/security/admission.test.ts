// Admission against the host, with the official SDK against a real server started with small limits: no more
// live sandboxes (running and paused together) than configured, nothing new or resumed while the host is short of
// memory (a floor set above this machine's MemAvailable), and no template larger than the host. Each refusal
// reaches the SDK as E2B's error with a message naming the limit and the current usage.
import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import { totalmem } from "node:os";
import { afterAll, describe, expect, it } from "vitest";
import { RateLimitError, Sandbox, SandboxError, Template } from "e2b";
import { burrowDown, freePort, startServerProcess, stopServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { newTestInstance } from "../helpers/test-instance.js";

/** Start the server with BURROW_* settings in its environment. */
function startWith(env: Record<string, string>, port: number): Promise<ServerProcess> {
  return startServerProcess(instance, port, ["--pool-size", "0"], env);
}

const instance = newTestInstance("admit");
let server: ServerProcess | undefined;

afterAll(async () => {
  if (server) await stopServerProcess(server, "SIGTERM");
  burrowDown(instance);
  const tables = execFileSync("nft", ["list", "tables"], { encoding: "utf8" });
  rmSync(instance.stateDir, { recursive: true, force: true });
  expect(tables).not.toContain(`burrow_${instance.instance}`);
});

describe("admission", () => {
  it("refuses sandboxes beyond the live limit (paused ones count), then nothing new or resumed while memory is short", { timeout: 300_000 }, async () => {
    const port = await freePort();
    server = await startWith({ BURROW_MAX_SANDBOXES: "3" }, port);
    let opts = { apiKey: server.apiKey, apiUrl: server.url, sandboxUrl: server.url };
    const [a, b, c] = [await Sandbox.create("base", opts), await Sandbox.create("base", opts), await Sandbox.create("base", opts)];

    const refused = await Sandbox.create("base", opts).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RateLimitError);
    expect((refused as Error).message).toContain("live sandboxes: 3 running or paused, the limit is 3; kill a sandbox first");
    // A fork is a new sandbox too.
    await expect(a.fork()).rejects.toThrow(/live sandboxes: 3 running or paused, the limit is 3/);

    // Paused sandboxes hold their memory: they still count.
    expect(await c.pause()).toBe(true);
    await expect(Sandbox.create("base", opts)).rejects.toThrow(/live sandboxes: 3 running or paused/);
    expect(await b.kill()).toBe(true);
    const d = await Sandbox.create("base", opts);
    expect(await d.isRunning()).toBe(true);

    // The same host, now with a MemAvailable floor above all of its memory: sandboxes stay, nothing new starts.
    await stopServerProcess(server, "SIGTERM");
    const floorMB = Math.ceil(totalmem() / 2 ** 20) * 4;
    server = await startWith({ BURROW_MAX_SANDBOXES: "10", BURROW_MIN_AVAILABLE_MEMORY_MB: String(floorMB) }, port);
    opts = { apiKey: server.apiKey, apiUrl: server.url, sandboxUrl: server.url };
    const short = await Sandbox.create("base", opts).catch((e: unknown) => e);
    expect(short).toBeInstanceOf(SandboxError);
    expect((short as Error).message).toMatch(new RegExp(`^507: host memory: \\d+ MiB available, ${floorMB} MiB floor$`));
    // Resuming the paused sandbox would bring its processes back: refused alike, and it stays paused.
    await expect(Sandbox.connect(c.sandboxId, opts)).rejects.toThrow(new RegExp(`host memory: \\d+ MiB available, ${floorMB} MiB floor`));
    expect((await Sandbox.getInfo(c.sandboxId, opts)).state).toBe("paused");
    // Running sandboxes are not affected.
    expect((await Sandbox.connect(a.sandboxId, opts)).sandboxId).toBe(a.sandboxId);
    for (const sandbox of [a, c, d]) expect(await Sandbox.kill(sandbox.sandboxId, opts)).toBe(true);
  });

  it("refuses a template larger than the host before building it", { timeout: 120_000 }, async () => {
    const port = await freePort();
    if (server) await stopServerProcess(server, "SIGTERM");
    server = await startWith({}, port);
    const opts = { apiKey: server.apiKey, apiUrl: server.url, sandboxUrl: server.url };
    const hostMB = Math.floor(totalmem() / 2 ** 20);
    await expect(Template.build(Template().fromTemplate("base"), "too-much-memory", { ...opts, memoryMB: 262_144 })).rejects.toThrow(
      `memoryMB 262144 is more than this host's memory (${hostMB} MiB)`,
    );
    await expect(Template.build(Template().fromTemplate("base"), "too-many-cpus", { ...opts, cpuCount: 64 })).rejects.toThrow(
      /cpuCount 64 is more than this host's CPUs \(\d+\)/,
    );
  });
});
