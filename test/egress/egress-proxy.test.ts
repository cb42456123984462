// A sandbox's own egress proxy (E2B's network.egressProxy), with the official SDK against a Burrow server of this
// file's own: SOCKS5 (user/password) and HTTP CONNECT proxies run inside the fake internet's namespace
// (test/helpers/test-proxies.mjs, at P, connecting out from P), next to a TCP target on an arbitrary port that
// answers with the address it sees. Every TCP port of the sandbox goes through the proxy (the proxy logs it, the
// target sees P), wrong credentials fail closed, updateNetwork takes the proxy away and sets it again live, checkpoint
// children and snapshot creates keep it, a record of the previous version's form still tunnels after a restart, GET
// never shows the password, bad addresses are 400 naming them; header transforms of such a sandbox go through its
// proxy too (HTTP, and TLS on top of the tunnel). Every address is the fake internet's (203.0.113.0/24), every name
// ends in .test (answered by the fake internet's DNS server, the server's only upstream).
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Sandbox } from "e2b";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DNS_ADDRESS, type FakeInternet, startFakeInternet } from "../helpers/fake-internet.js";
import { burrowDown, freePort, startServerProcess, stopServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { sandboxInternals } from "../helpers/sandbox-internals.js";
import { newTestInstance } from "../helpers/test-instance.js";

const A = "203.0.113.10"; // the target: HTTP on 80 (fake internet), "seen <peer>" on 7000 (below)
const P = "203.0.113.30"; // the proxies: SOCKS5 on 1080, HTTP CONNECT on 3128
const SOCKS = { address: `socks5://${P}:1080`, username: "alice", password: "s3cret" };
const HTTP = { address: `http://${P}:3128`, username: "bob", password: "pw" };

const instance = newTestInstance("eproxy");
let internet: FakeInternet;
let server: ServerProcess;
let port: number;
let proxies: ChildProcess;
let caDir: string;
const proxyLog: string[] = [];
const created: Sandbox[] = [];

/** The server's resolver asks only the fake internet's DNS server; upstream TLS is checked against its CA. */
const serverEnv = () => ({ BURROW_DNS_UPSTREAM: DNS_ADDRESS, BURROW_EGRESS_UPSTREAM_CA: join(caDir, "fake-ca.pem") });

const opts = () => ({ apiKey: server.apiKey, apiUrl: server.url, sandboxUrl: server.url, debug: false as const });

async function create(network: object): Promise<Sandbox> {
  const sandbox = await Sandbox.create("base", { ...opts(), timeoutMs: 300_000, network } as never);
  created.push(sandbox);
  return sandbox;
}

/** The body of a GET from inside the sandbox, or "" when the connection failed. */
async function get(sandbox: Sandbox, url: string): Promise<string> {
  internet.assertRouted();
  const r = await sandbox.commands.run(`curl -s -m 8 ${url} 2>&1 || true`, { timeoutMs: 60_000 });
  return r.stdout.trim();
}

// Runs in the namespace: both proxies and the target on port 7000, each log line on stdout.
const SCRIPT = (helper: string) => `import { createServer } from "node:net";
import { startHttpConnectProxy, startSocks5Proxy } from ${JSON.stringify(helper)};
const tap = (name, p) => { p.log.push = (...l) => { for (const x of l) console.log(name + " " + x); return l.length; }; };
tap("socks", await startSocks5Proxy({ host: "${P}", port: 1080, username: "${SOCKS.username}", password: "${SOCKS.password}", localAddress: "${P}" }));
tap("http", await startHttpConnectProxy({ host: "${P}", port: 3128, username: "${HTTP.username}", password: "${HTTP.password}", localAddress: "${P}" }));
const target = createServer((s) => s.end("HTTP/1.1 200 OK\\r\\nContent-Length: " + ("seen " + s.remoteAddress).length + "\\r\\nConnection: close\\r\\n\\r\\nseen " + s.remoteAddress));
await new Promise((r) => target.listen(7000, "${A}", r));
console.log("ready");`;

describe("egress through the user's proxy (own server, fake internet)", () => {
  beforeAll(async () => {
    internet = await startFakeInternet([A, P], { names: { "api.test": A } });
    caDir = mkdtempSync(join(tmpdir(), "burrow-eproxy-ca-"));
    writeFileSync(join(caDir, "fake-ca.pem"), internet.caCert!);
    const helper = pathToFileURL(join(import.meta.dirname, "..", "helpers", "test-proxies.mjs")).href;
    proxies = spawn("ip", ["netns", "exec", internet.netns, process.execPath, "--input-type=module", "-e", SCRIPT(helper)], { stdio: ["ignore", "pipe", "inherit"] });
    await new Promise<void>((resolve, reject) => {
      let buffered = "";
      proxies.once("exit", (code) => reject(new Error(`the proxies exited (${code})`)));
      proxies.stdout!.on("data", (d: Buffer) => {
        buffered += d.toString();
        const lines = buffered.split("\n");
        buffered = lines.pop()!;
        for (const line of lines) line === "ready" ? resolve() : proxyLog.push(line);
      });
    });
    port = await freePort();
    server = await startServerProcess(instance, port, ["--pool-size", "0"], serverEnv());
  });

  afterAll(async () => {
    try {
      await Promise.all(created.map((s) => s.kill().catch(() => undefined)));
      if (server) await stopServerProcess(server, "SIGTERM");
      burrowDown(instance);
      rmSync(instance.stateDir, { recursive: true, force: true });
      if (caDir) rmSync(caDir, { recursive: true, force: true });
    } finally {
      if (proxies && proxies.exitCode === null) {
        proxies.kill("SIGTERM");
        await new Promise((resolve) => proxies.once("exit", resolve));
      }
      await internet?.close();
    }
  });

  it("every TCP port goes through a SOCKS5 proxy with credentials; the target sees the proxy; GET shows no password", async () => {
    const sandbox = await create({ egressProxy: SOCKS });
    expect(await get(sandbox, `http://${A}:7000/`)).toBe(`seen ${P}`);
    expect(await get(sandbox, `http://${A}/`)).toBe(`hello from ${A}`);
    expect(proxyLog.filter((l) => l.startsWith("socks "))).toEqual([`socks CONNECT ${A}:7000`, `socks CONNECT ${A}:80`]);
    const info = await Sandbox.getInfo(sandbox.sandboxId, opts());
    const network = (info as unknown as { network?: { egressProxy?: object } }).network;
    expect(network?.egressProxy).toEqual({ address: SOCKS.address, username: SOCKS.username });
    const raw = await fetch(`${server.url}/sandboxes/${sandbox.sandboxId}`, { headers: { "x-api-key": server.apiKey } });
    expect(await raw.text()).not.toContain(SOCKS.password);
  });

  it("through an HTTP CONNECT proxy with Proxy-Authorization", async () => {
    const sandbox = await create({ egressProxy: HTTP });
    expect(await get(sandbox, `http://${A}:7000/`)).toBe(`seen ${P}`);
    expect(proxyLog).toContain(`http CONNECT ${A}:7000`);
  });

  it("wrong credentials fail closed: no connection, never a direct one", async () => {
    const sandbox = await create({ egressProxy: { ...SOCKS, password: "wrong" } });
    const before = proxyLog.length;
    expect(await get(sandbox, `http://${A}:7000/`)).toBe("");
    expect(proxyLog.slice(before)).toEqual(["socks AUTH FAILED"]);
  });

  it("updateNetwork takes the proxy away and sets it again, live", async () => {
    const sandbox = await create({ egressProxy: SOCKS });
    expect(await get(sandbox, `http://${A}:7000/`)).toBe(`seen ${P}`);
    await sandbox.updateNetwork({});
    const direct = await get(sandbox, `http://${A}:7000/`);
    expect(direct).toMatch(/^seen /);
    expect(direct).not.toBe(`seen ${P}`);
    await sandbox.updateNetwork({ egressProxy: HTTP } as never);
    expect(await get(sandbox, `http://${A}:7000/`)).toBe(`seen ${P}`);
    expect(proxyLog.at(-1)).toBe(`http CONNECT ${A}:7000`);
  });

  it("checkpoint children and a snapshot's sandboxes go through their source's proxy, also after it ended", async () => {
    const source = await create({ egressProxy: SOCKS });
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${server.url}${path}`, {
        method,
        headers: { "x-api-key": server.apiKey, "content-type": "application/json" },
        body: JSON.stringify(body ?? {}),
      });
      return { status: res.status, json: (await res.json()) as any };
    };
    const checkpoint = await call("POST", `/burrow/v1/sandboxes/${source.sandboxId}/checkpoints`);
    expect(checkpoint.status).toBe(201);
    const snapshot = await call("POST", `/sandboxes/${source.sandboxId}/snapshots`);
    expect(snapshot.status).toBe(201);
    await source.kill();

    const branch = await call("POST", `/burrow/v1/checkpoints/${checkpoint.json.checkpointID}/branch`, { count: 1 });
    expect(branch.status).toBe(201);
    const child = await Sandbox.connect(branch.json[0].sandbox.sandboxID, opts());
    created.push(child);
    const fromSnapshot = await Sandbox.create(snapshot.json.snapshotID, { ...opts(), timeoutMs: 120_000 });
    created.push(fromSnapshot);
    for (const copy of [child, fromSnapshot]) {
      const before = proxyLog.length;
      expect(await get(copy, `http://${A}:7000/`)).toBe(`seen ${P}`);
      expect(proxyLog.slice(before)).toEqual([`socks CONNECT ${A}:7000`]);
      const info = (await Sandbox.getInfo(copy.sandboxId, opts())) as unknown as { network?: { egressProxy?: object } };
      expect(info.network?.egressProxy).toEqual({ address: SOCKS.address, username: SOCKS.username });
    }
  });

  it("a sandbox recorded before `proxied` existed (a reserved deny entry) still tunnels after an upgrade, a restart and a cold boot", async () => {
    const sandbox = await create({ egressProxy: SOCKS });
    expect(await get(sandbox, `http://${A}:7000/`)).toBe(`seen ${P}`);
    await stopServerProcess(server, "SIGKILL");
    // The orchestrator's record as the previous version wrote it.
    const file = join(sandboxInternals(instance.stateDir, sandbox.sandboxId).dir, "sandbox.json");
    const record = JSON.parse(readFileSync(file, "utf8")) as { egress: { allowOut: string[]; denyOut: string[]; proxied?: string } };
    expect(record.egress).toEqual({ allowOut: [], denyOut: [], proxied: "tunnel" });
    writeFileSync(file, JSON.stringify({ ...record, egress: { allowOut: [], denyOut: ["egress-proxy.burrow.invalid"] } }), { mode: 0o600 });
    server = await startServerProcess(instance, port, ["--pool-size", "0"], serverEnv());

    // A cold boot applies the rules from the record again (the kernel's sets are rebuilt from it).
    const pause = await fetch(`${server.url}/sandboxes/${sandbox.sandboxId}/pause`, {
      method: "POST",
      headers: { "x-api-key": server.apiKey, "content-type": "application/json" },
      body: JSON.stringify({ memory: false }),
    });
    expect(pause.status).toBe(204);
    const resumed = await Sandbox.connect(sandbox.sandboxId, opts());
    const before = proxyLog.length;
    expect(await get(resumed, `http://${A}:7000/`)).toBe(`seen ${P}`);
    expect(proxyLog.slice(before)).toEqual([`socks CONNECT ${A}:7000`]);
    expect((await Sandbox.getInfo(sandbox.sandboxId, opts()) as unknown as { network: { denyOut: string[] } }).network.denyOut).toEqual([]);
  });

  it("bad proxies are 400 naming the value", async () => {
    const post = (egressProxy: object) =>
      fetch(`${server.url}/sandboxes`, {
        method: "POST",
        headers: { "x-api-key": server.apiKey, "content-type": "application/json" },
        body: JSON.stringify({ templateID: "base", network: { egressProxy } }),
      });
    for (const [egressProxy, text] of [
      [{ address: "ftp://proxy.test:21" }, "ftp://proxy.test:21"],
      [{ address: "127.0.0.1:1080" }, "127.0.0.1:1080"],
      [{ address: `${P}:99999` }, "port 99999"],
      [{ address: `${P}:1080`, password: "x" }, "password needs a username"],
    ] as const) {
      const res = await post(egressProxy);
      expect(res.status).toBe(400);
      const body = (await res.json()) as { code: number; message: string };
      expect(body.code).toBe(400);
      expect(body.message).toContain(text);
    }
  });

  it("header transforms of a sandbox with a proxy go through that proxy, over HTTP and over TLS on the tunnel", async () => {
    const sandbox = await create({ egressProxy: SOCKS, rules: { "api.test": [{ transform: { headers: { "X-Through": "the-proxy" } } }] } });
    const before = proxyLog.length;
    for (const url of ["http://api.test/headers", "https://api.test/headers"]) {
      const raw = JSON.parse(await get(sandbox, url)) as string[];
      const i = raw.findIndex((h) => h.toLowerCase() === "x-through");
      expect(raw[i + 1], url).toBe("the-proxy");
    }
    expect(proxyLog.slice(before)).toEqual([`socks CONNECT ${A}:80`, `socks CONNECT ${A}:443`]);
  });
});
