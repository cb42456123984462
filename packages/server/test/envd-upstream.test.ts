// The server's own calls to envd (the bus runner's processes and file copies, the watch bridge's streams) go where
// the gateway's upstream resolver says, like the SDK's traffic: here the resolver sends a stub sandbox's envd port to
// a real envd on the host, while the sandbox's own address has nothing listening on that port.
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { EmbeddedBus, subscribeSandboxEvents, type SandboxEvent } from "@burrow/bus";
import { initEnvd } from "@burrow/orchestrator";
import { ENVD_PORT } from "@burrow/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setupEnvd } from "../../envd/test/helpers/envd-fixture.js";
import { startTestServer, type TestServer } from "./helpers/test-server.js";

let env: Awaited<ReturnType<typeof setupEnvd>>;
let bus: EmbeddedBus;
let t: TestServer;
let sandboxId = "";
const resolved: number[] = [];

beforeAll(async () => {
  env = await setupEnvd();
  bus = new EmbeddedBus({ path: ":memory:" });
  t = await startTestServer({
    deps: {
      bus,
      upstream: (record, port) => {
        resolved.push(port);
        return port === ENVD_PORT ? { host: "127.0.0.1", port: env.envd.port } : t.stub.upstream(record, port);
      },
    },
  });
  const res = await t.api("/v2/sandboxes", { method: "POST", headers: { "content-type": "application/json" }, body: '{"templateID":"base","secure":true}' });
  const created = (await res.json()) as { sandboxID: string; envdAccessToken: string };
  sandboxId = created.sandboxID;
  // The real envd takes the token the server gave this sandbox (re-/init with the token it has now).
  await initEnvd(
    { host: "127.0.0.1", port: env.envd.port, accessToken: env.token },
    { envVars: {}, accessToken: created.envdAccessToken, defaultUser: env.user.name },
  );
});
afterAll(async () => {
  await t?.close();
  await bus?.close();
  await env?.cleanup();
});

const json = { "content-type": "application/json" };

describe("the bus runner reaches envd through the upstream resolver", () => {
  it("runs a task's command and copies its inputs there", async () => {
    const source = join(env.dir, `in-${randomBytes(4).toString("hex")}.txt`);
    writeFileSync(source, "handed over");
    execFileSync("chown", [env.user.name, source]);
    const copy = `${source}.copy`;
    resolved.length = 0;
    const submit = await t.api("/burrow/v1/tasks", {
      method: "POST",
      headers: json,
      body: JSON.stringify({
        target: { sandboxId },
        cmd: `echo "$GREETING $(id -un)"; cat ${copy}`,
        process: { env: { GREETING: "hello" }, user: env.user.name },
        inputs: [{ sandboxId, path: source, to: copy }],
        maxAttempts: 1,
      }),
    });
    expect(submit.status).toBe(201);
    const { id } = (await submit.json()) as { id: string };
    const status = (await (await t.api(`/burrow/v1/tasks/${encodeURIComponent(id)}?waitMs=30000`)).json()) as {
      state: string;
      result?: { exitCode: number; stdout: string };
    };
    expect(status).toMatchObject({ state: "succeeded", result: { exitCode: 0, stdout: `hello ${env.user.name}\nhanded over` } });
    expect(readFileSync(copy, "utf8")).toBe("handed over");
    expect(resolved).toContain(ENVD_PORT);
  });
});

describe("the watch bridge reaches envd through the upstream resolver", () => {
  it("publishes a change in the watched directory", async () => {
    const dir = join(env.dir, `watched-${randomBytes(4).toString("hex")}`);
    mkdirSync(dir);
    execFileSync("chown", [env.user.name, dir]);
    const stop = new AbortController();
    const seen: SandboxEvent[] = [];
    const events = subscribeSandboxEvents(bus, { sandboxId, category: "fs" }, { signal: stop.signal });
    const collecting = (async () => {
      for await (const e of events) {
        seen.push(e);
        if ("path" in e && e.path === join(dir, "new.txt")) break;
      }
    })();
    const res = await t.api(`/burrow/v1/sandboxes/${sandboxId}/watches`, {
      method: "POST",
      headers: json,
      body: JSON.stringify({ path: dir, recursive: false, user: env.user.name }),
    });
    expect(res.status).toBe(201);
    writeFileSync(join(dir, "new.txt"), "x");
    await collecting;
    stop.abort();
    expect(seen.some((e) => e.type === "create" && "path" in e && e.path === join(dir, "new.txt"))).toBe(true);
  });
});
