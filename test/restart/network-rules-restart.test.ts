// Egress rules survive a SIGKILLed server: after a restart on the same state directory the sandbox still cannot
// reach its denied fake host and still reaches the allowed one, GET still shows its network, an update still
// applies, and a fork taken after the restart is restricted alike. Egress goes only to a fake internet in a network
// namespace this file creates (test/helpers/fake-internet.ts).
import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import { Sandbox } from "e2b";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeInternet, startFakeInternet } from "../helpers/fake-internet.js";
import { burrowDown, freePort, startServerProcess, stopServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { newTestInstance } from "../helpers/test-instance.js";

const A = "203.0.113.10";
const B = "203.0.113.20";

describe("network rules across a server restart", () => {
  const instance = newTestInstance("netrestart");
  let server: ServerProcess | undefined;
  let internet: FakeInternet;

  beforeAll(async () => {
    internet = await startFakeInternet([A, B]);
  });

  afterAll(async () => {
    if (server) await stopServerProcess(server, "SIGTERM");
    burrowDown(instance);
    await internet?.close();
    const tables = execFileSync("nft", ["list", "tables"], { encoding: "utf8" });
    rmSync(instance.stateDir, { recursive: true, force: true });
    expect(tables).not.toContain(`burrow_${instance.instance}`);
  });

  async function reach(sandbox: Sandbox, host: string): Promise<string> {
    internet.assertRouted();
    const result = await sandbox.commands.run(`curl -s -m 3 http://${host}/ || echo blocked`, { timeoutMs: 30_000 });
    return result.stdout.trim();
  }

  it("keeps a sandbox's denyOut after SIGKILL and restart, and forks after it are restricted", async () => {
    const port = await freePort();
    server = await startServerProcess(instance, port, ["--pool-size", "0"]);
    let opts = { apiKey: server.apiKey, apiUrl: server.url, sandboxUrl: server.url, debug: false };
    const sandbox = await Sandbox.create("base", { ...opts, timeoutMs: 300_000, network: { denyOut: [B] } });
    expect(await reach(sandbox, B)).toBe("blocked");
    expect(await reach(sandbox, A)).toBe(`hello from ${A}`);

    await stopServerProcess(server, "SIGKILL");
    server = await startServerProcess(instance, port, ["--pool-size", "0"]);
    opts = { ...opts, apiKey: server.apiKey };

    const again = await Sandbox.connect(sandbox.sandboxId, opts);
    expect(await reach(again, B)).toBe("blocked");
    expect(await reach(again, A)).toBe(`hello from ${A}`);
    expect((await again.getInfo()).network).toMatchObject({ allowOut: [], denyOut: [B] });

    const [fork] = await Sandbox.fork(sandbox.sandboxId, { ...opts, timeoutMs: 120_000 });
    if (!(fork instanceof Sandbox)) throw fork ?? new Error("no fork");
    expect(await reach(fork, B)).toBe("blocked");
    expect(await reach(fork, A)).toBe(`hello from ${A}`);

    // The restarted server still changes the rules live.
    await again.updateNetwork({ denyOut: [A] });
    expect(await reach(again, A)).toBe("blocked");
    expect(await reach(again, B)).toBe(`hello from ${B}`);

    expect(await fork.kill()).toBe(true);
    expect(await again.kill()).toBe(true);
  }, 600_000);
});
