// Header transforms at egress with the official SDK against a Burrow server of this file's own: network.rules set
// headers whose ${e2b.secrets.NAME} placeholders are resolved by the egress proxy, over HTTP and over HTTPS (TLS
// terminated with the instance's egress CA, which sandboxes trust through the system store and NODE_EXTRA_CA_CERTS,
// and re-originated to the fake host verified against BURROW_EGRESS_UPSTREAM_CA). The sandbox never holds the value:
// not in its env, its processes' environments or its files. Hosts without rules are never intercepted. Every name
// ends in .test and every address is the fake internet's (203.0.113.0/24). Copies keep the rules: forks, checkpoint
// children, snapshot creates, a rollback and a filesystem pause.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Sandbox } from "e2b";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DNS_ADDRESS, type FakeInternet, startFakeInternet } from "../helpers/fake-internet.js";
import { burrowDown, freePort, startServerProcess, stopServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { newTestInstance } from "../helpers/test-instance.js";

const A = "203.0.113.10";
const NAMES = { "api.test": A, "plain.test": A, "*.wild.test": A };
// Distinctive, so that a grep for it finds nothing but the value itself.
const VALUE = `sk-burrow-${Math.random().toString(36).slice(2)}-value`;
const SECRET = `egress_token_${Math.random().toString(36).slice(2, 8)}`;
const NODE = "/.burrow/lib/ld.so --library-path /.burrow/lib /.burrow/bin/node";

const instance = newTestInstance("xform");
let internet: FakeInternet;
let server: ServerProcess;
let caDir: string;
let secretId: string;
const created: Sandbox[] = [];

const opts = () => ({ apiKey: server.apiKey, apiUrl: server.url, sandboxUrl: server.url, debug: false as const });

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { "x-api-key": server.apiKey, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

const rulesFor = (host: string, headers: Record<string, string>) => ({ [host]: [{ transform: { headers } }] });

async function spawn(network?: Record<string, unknown>): Promise<Sandbox> {
  const sandbox = await Sandbox.create("base", { ...opts(), timeoutMs: 300_000, ...(network ? { network: network as never } : {}) });
  created.push(sandbox);
  return sandbox;
}

async function sh(sandbox: Sandbox, command: string, user?: "root"): Promise<string> {
  internet.assertRouted();
  const r = await sandbox.commands.run(`${command} 2>&1 || true`, { timeoutMs: 60_000, ...(user ? { user } : {}) });
  return r.stdout.trim();
}

/** The headers the fake host saw, as [name, value] pairs (curl with the sandbox's system store only). */
async function seen(sandbox: Sandbox, url: string, extra = ""): Promise<[string, string][]> {
  const out = await sh(sandbox, `curl -s -m 10 ${extra} ${url}`);
  let raw: string[];
  try {
    raw = JSON.parse(out) as string[];
  } catch {
    throw new Error(`not a header list from ${url}: ${out}`);
  }
  const pairs: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) pairs.push([raw[i]!, raw[i + 1]!]);
  return pairs;
}

const valuesOf = (pairs: [string, string][], name: string) => pairs.filter(([n]) => n.toLowerCase() === name.toLowerCase()).map(([, v]) => v);

describe("egress header transforms (own server, fake internet)", () => {
  beforeAll(async () => {
    internet = await startFakeInternet([A], { names: NAMES });
    caDir = mkdtempSync(join(tmpdir(), "burrow-xform-ca-"));
    writeFileSync(join(caDir, "fake-ca.pem"), internet.caCert!);
    server = await startServerProcess(instance, await freePort(), ["--pool-size", "0"], {
      BURROW_DNS_UPSTREAM: DNS_ADDRESS,
      BURROW_EGRESS_UPSTREAM_CA: join(caDir, "fake-ca.pem"),
    });
    const r = await api("POST", "/secrets", { name: SECRET, value: VALUE });
    expect(r.status).toBe(201);
    secretId = r.json.secretID;
  });

  afterAll(async () => {
    try {
      await Promise.all(created.map((s) => s.kill().catch(() => undefined)));
      if (server) await stopServerProcess(server, "SIGTERM");
      burrowDown(instance);
      rmSync(instance.stateDir, { recursive: true, force: true });
      if (caDir) rmSync(caDir, { recursive: true, force: true });
    } finally {
      await internet?.close();
    }
  });

  it("sets the headers with the secret's value over HTTP (every request of a keep-alive connection) and HTTPS; the sandbox never holds it", async () => {
    const placeholder = `Bearer \${e2b.secrets.${SECRET}}`;
    const sandbox = await spawn({ rules: rulesFor("api.test", { Authorization: placeholder, "X-Burrow-Test": "fixed" }) });

    // HTTP, replacing what the sandbox sent under that name (in any case).
    const http = await seen(sandbox, "http://api.test/headers", "-H 'authorization: from-sandbox'");
    expect(valuesOf(http, "authorization")).toEqual([`Bearer ${VALUE}`]);
    expect(valuesOf(http, "x-burrow-test")).toEqual(["fixed"]);

    // Two requests on one connection (curl reuses it): both get the header.
    const twice = await sh(sandbox, "curl -s -m 10 -w '\\n%{num_connects}\\n' http://api.test/headers http://api.test/headers");
    const lines = twice.split("\n");
    expect(lines.filter((l) => l.startsWith("[")).every((l) => l.includes(`Bearer ${VALUE}`))).toBe(true);
    expect(lines.filter((l) => l.startsWith("[")).length).toBe(2);
    expect(lines.filter((l) => /^\d+$/.test(l))).toEqual(["1", "0"]);

    // HTTPS with the system store only (curl) and with NODE_EXTRA_CA_CERTS (node's fetch).
    const https = await seen(sandbox, "https://api.test/headers");
    expect(valuesOf(https, "authorization")).toEqual([`Bearer ${VALUE}`]);
    const fromNode = await sh(sandbox, `${NODE} -e 'fetch("https://api.test/headers").then(r => r.text()).then(console.log, e => console.log("failed", e.cause ?? e))'`);
    expect(fromNode).toContain(`Bearer ${VALUE}`);
    expect(await sh(sandbox, "curl -sv -m 10 -o /dev/null https://api.test/headers 2>&1 | grep -i 'issuer:'")).toMatch(/Burrow egress CA/);

    // Nowhere inside: env, every process's environment, files.
    const env = await sh(sandbox, "env");
    expect(env).toContain("NODE_EXTRA_CA_CERTS=");
    expect(env).not.toContain(VALUE);
    expect(await sh(sandbox, `cat /proc/[0-9]*/environ | tr '\\0' '\\n' | grep -cF '${VALUE}'`, "root")).toBe("0");
    expect(await sh(sandbox, `grep -rlF '${VALUE}' /etc /home /tmp /root /.burrow; echo done`, "root")).toBe("done");

    // GET answers the rules as given, with the placeholder.
    const info = await api("GET", `/sandboxes/${sandbox.sandboxId}`);
    expect(info.json.network.rules).toEqual(rulesFor("api.test", { Authorization: placeholder, "X-Burrow-Test": "fixed" }));
    expect(JSON.stringify(info.json)).not.toContain(VALUE);
    expect(info.json.network.denyOut).toEqual([]);
  });

  it("a host without rules is not intercepted: the sandbox sees the fake host's own certificate", async () => {
    const sandbox = await spawn({ rules: rulesFor("api.test", { "X-Burrow-Test": "fixed" }) });
    await sandbox.files.write("/tmp/fake-ca.pem", internet.caCert!);
    // Not trusted through the sandbox's store (the fake CA is not in it): the chain is the fake host's.
    expect(await sh(sandbox, "curl -s -m 10 -o /dev/null -w '%{http_code}' https://plain.test/headers")).toBe("000");
    const plain = await seen(sandbox, "https://plain.test/headers", "--cacert /tmp/fake-ca.pem");
    expect(valuesOf(plain, "x-burrow-test")).toEqual([]);
    expect(await sh(sandbox, "curl -sv -m 10 --cacert /tmp/fake-ca.pem -o /dev/null https://plain.test/ 2>&1 | grep -i 'issuer:'")).toMatch(/fake internet test CA/);
    // A wildcard rule names hosts below its domain, not others.
    await sandbox.updateNetwork({ rules: rulesFor("*.wild.test", { "X-Burrow-Test": "wild" }) } as never);
    expect(valuesOf(await seen(sandbox, "https://a.wild.test/headers"), "x-burrow-test")).toEqual(["wild"]);
    // The upstream is verified: the fake host's certificate names *.wild.test, which does not cover a.b.wild.test.
    expect(await sh(sandbox, "curl -s -m 10 https://a.b.wild.test/headers")).toMatch(/^Burrow: a\.b\.wild\.test could not be reached \(.*altnames/);
    expect(valuesOf(await seen(sandbox, "http://api.test/headers"), "x-burrow-test")).toEqual([]);
  });

  it("rules given by a network update apply, and an updated secret applies from the next connection", async () => {
    const sandbox = await spawn();
    expect(valuesOf(await seen(sandbox, "http://api.test/headers"), "x-key")).toEqual([]);
    await sandbox.updateNetwork({ rules: rulesFor("api.test", { "X-Key": `\${e2b.secrets.${SECRET}}` }) } as never);
    expect(valuesOf(await seen(sandbox, "https://api.test/headers"), "x-key")).toEqual([VALUE]);
    const updated = `${VALUE}-2`;
    expect((await api("POST", `/secrets/${secretId}`, { value: updated })).status).toBeLessThan(300);
    try {
      expect(valuesOf(await seen(sandbox, "https://api.test/headers"), "x-key")).toEqual([updated]);
      expect(valuesOf(await seen(sandbox, "http://api.test/headers"), "x-key")).toEqual([updated]);
    } finally {
      await api("POST", `/secrets/${secretId}`, { value: VALUE });
    }
  });

  it("a fork keeps its source's rules", async () => {
    const source = await spawn({ rules: rulesFor("api.test", { "X-Key": `\${e2b.secrets.${SECRET}}` }) });
    const results = await Sandbox.fork(source.sandboxId, { ...opts(), timeoutMs: 120_000 });
    const fork = results[0];
    if (!(fork instanceof Sandbox)) throw fork ?? new Error("no fork");
    created.push(fork);
    expect(valuesOf(await seen(fork, "https://api.test/headers"), "x-key")).toEqual([VALUE]);
    expect((await api("GET", `/sandboxes/${fork.sandboxId}`)).json.network.rules).toEqual(rulesFor("api.test", { "X-Key": `\${e2b.secrets.${SECRET}}` }));
  });

  it("a rollback, a filesystem pause, checkpoint children and a snapshot's sandboxes keep the source's rules, also after it ended", async () => {
    const rules = rulesFor("api.test", { "X-Key": `\${e2b.secrets.${SECRET}}` });
    const source = await spawn({ rules });
    const checkpoint = await api("POST", `/burrow/v1/sandboxes/${source.sandboxId}/checkpoints`, {});
    expect(checkpoint.status).toBe(201);
    const checkpointID: string = checkpoint.json.checkpointID;
    const snapshot = await api("POST", `/sandboxes/${source.sandboxId}/snapshots`, {});
    expect(snapshot.status).toBe(201);

    // The sandbox itself, back on the checkpoint's files; then halted and cold-booted from its record.
    expect((await api("POST", `/burrow/v1/sandboxes/${source.sandboxId}/rollback`, { checkpointID })).status).toBe(200);
    expect(valuesOf(await seen(source, "https://api.test/headers"), "x-key")).toEqual([VALUE]);
    expect((await api("POST", `/sandboxes/${source.sandboxId}/pause`, { memory: false })).status).toBe(204);
    const resumed = await Sandbox.connect(source.sandboxId, opts());
    expect(valuesOf(await seen(resumed, "https://api.test/headers"), "x-key")).toEqual([VALUE]);

    // Gone, and its config with it: what was kept with the checkpoint and the snapshot still applies to their children.
    await resumed.kill();
    const branch = await api("POST", `/burrow/v1/checkpoints/${checkpointID}/branch`, { count: 1 });
    expect(branch.status).toBe(201);
    const child = await Sandbox.connect(branch.json[0].sandbox.sandboxID, opts());
    created.push(child);
    expect(valuesOf(await seen(child, "https://api.test/headers"), "x-key")).toEqual([VALUE]);
    expect((await api("GET", `/sandboxes/${child.sandboxId}`)).json.network.rules).toEqual(rules);

    const fromSnapshot = await Sandbox.create(snapshot.json.snapshotID, { ...opts(), timeoutMs: 120_000 });
    created.push(fromSnapshot);
    expect(valuesOf(await seen(fromSnapshot, "http://api.test/headers"), "x-key")).toEqual([VALUE]);
    expect((await api("GET", `/sandboxes/${fromSnapshot.sandboxId}`)).json.network.rules).toEqual(rules);
  });

  it("bad rules are a 400 naming what is wrong, and a failed update keeps the old rules", async () => {
    await expect(spawn({ rules: rulesFor("api.test", { Authorization: "${e2b.secrets.no_such_secret}" }) })).rejects.toThrow(/no_such_secret/);
    const bad = async (network: Record<string, unknown>) => (await api("POST", "/sandboxes", { templateID: "base", network })).json;
    expect(await bad({ rules: rulesFor("api.test", { "Bad Header": "x" }) })).toMatchObject({ code: 400, message: expect.stringMatching(/Bad Header/) });
    expect(await bad({ rules: rulesFor("api.test", { "X-A": "a\r\nX-B: b" }) })).toMatchObject({ code: 400, message: expect.stringMatching(/X-A/) });
    expect(await bad({ rules: rulesFor("*", { "X-A": "a" }) })).toMatchObject({ code: 400, message: expect.stringMatching(/'\*'/) });
    expect(await bad({ rules: rulesFor("api.test", { Host: "other.test" }) })).toMatchObject({ code: 400, message: expect.stringMatching(/Host/) });

    const sandbox = await spawn({ rules: rulesFor("api.test", { "X-Key": "kept" }) });
    const put = await api("PUT", `/sandboxes/${sandbox.sandboxId}/network`, { rules: rulesFor("api.test", { "X-Key": "${e2b.secrets.missing_one}" }) });
    expect(put).toMatchObject({ status: 400, json: { code: 400, message: expect.stringMatching(/missing_one/) } });
    expect(valuesOf(await seen(sandbox, "http://api.test/headers"), "x-key")).toEqual(["kept"]);
  });
});
