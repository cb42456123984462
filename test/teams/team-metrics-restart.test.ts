// Team metrics outlive the server: a team starts a sandbox on a server of its own, its samples appear under
// GET /teams/{id}/metrics, and after the server stops and starts again on the same state directory the same samples
// are answered (and sampling goes on).
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { Sandbox } from "e2b";
import { burrowDown, freePort, startServerProcess, stopServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { newTestInstance } from "../helpers/test-instance.js";

const instance = newTestInstance("teamm");
let server: ServerProcess | undefined;

afterAll(async () => {
  if (server) await stopServerProcess(server, "SIGTERM");
  burrowDown(instance);
  const tables = execFileSync("nft", ["list", "tables"], { encoding: "utf8" });
  rmSync(instance.stateDir, { recursive: true, force: true });
  expect(tables).not.toContain(`burrow_${instance.instance}`);
}, 120_000);

interface Sample {
  timestampUnix: number;
  concurrentSandboxes: number;
  sandboxStartRate: number;
}

async function metrics(key: string, teamID: string): Promise<Sample[]> {
  const res = await fetch(`${server!.url}/teams/${teamID}/metrics`, { headers: { "x-api-key": key } });
  expect(res.status).toBe(200);
  return (await res.json()) as Sample[];
}

describe("team metrics", () => {
  it("samples survive a restart of the server", { timeout: 600_000 }, async () => {
    const port = await freePort();
    server = await startServerProcess(instance, port, ["--pool-size", "0"]);
    const created = await fetch(`${server.url}/burrow/v1/teams`, {
      method: "POST",
      headers: { "x-api-key": server.apiKey, "content-type": "application/json" },
      body: JSON.stringify({ name: `metrics-${randomBytes(3).toString("hex")}` }),
    });
    expect(created.status).toBe(201);
    const team = (await created.json()) as { teamID: string; adminKey: { key: string } };
    const key = team.adminKey.key;
    const sandbox = await Sandbox.create("base", { apiKey: key, apiUrl: server.url, sandboxUrl: server.url, timeoutMs: 120_000 });
    // Wait for a sample that saw it running (the sampler runs every few seconds).
    let before: Sample[] = [];
    for (let i = 0; !before.some((s) => s.concurrentSandboxes === 1); i++) {
      expect(i).toBeLessThan(300);
      await new Promise((r) => setTimeout(r, 200));
      before = await metrics(key, team.teamID);
    }
    await sandbox.kill();
    await stopServerProcess(server, "SIGTERM");
    server = await startServerProcess(instance, port, ["--pool-size", "0"]);
    const after = await metrics(key, team.teamID);
    // Every sample answered before the restart is answered after it, unchanged.
    for (const s of before) expect(after).toContainEqual(s);
    expect(after.some((s) => s.concurrentSandboxes === 1 && s.sandboxStartRate >= 0)).toBe(true);
    // Another team does not see them.
    const other = await fetch(`${server.url}/burrow/v1/teams`, {
      method: "POST",
      headers: { "x-api-key": server.apiKey, "content-type": "application/json" },
      body: JSON.stringify({ name: `metrics-other-${randomBytes(3).toString("hex")}` }),
    });
    const otherKey = ((await other.json()) as { adminKey: { key: string } }).adminKey.key;
    expect((await fetch(`${server.url}/teams/${team.teamID}/metrics`, { headers: { "x-api-key": otherKey } })).status).toBe(404);
  });
});
