// Header transforms on ports beyond 80/443 with the official SDK against a Burrow server of this file's own:
// `network.rules` keys with a port (`api.test:8443`, Burrow's extension of E2B's name-only keys) apply only to
// connections to that port, which the egress proxy then takes too (TLS or HTTP told by the first bytes, TLS
// terminated with the instance's egress CA); a key without a port applies to 80 and 443 only; a port no key names
// is never intercepted. Bad ports are a 400 naming the key (and bad httpsPorts entries, E2B's ingress setting, by
// value). Every name ends in .test and every address is the fake
// internet's (203.0.113.0/24), whose hosts answer HTTP on 80 and 8080 and HTTPS on 443 and 8443.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Sandbox } from "e2b";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DNS_ADDRESS, type FakeInternet, startFakeInternet } from "../helpers/fake-internet.js";
import { freePort, startServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { keyedApi, sdkOptions } from "../helpers/keyed-api.js";
import { tearDownServers } from "../helpers/tear-down.js";
import { newTestInstance } from "../helpers/test-instance.js";

const A = "203.0.113.10";
const NAMES = { "api.test": A, "*.wild.test": A };
const VALUE = `sk-burrow-${Math.random().toString(36).slice(2)}-port`;
const SECRET = `port_token_${Math.random().toString(36).slice(2, 8)}`;

const instance = newTestInstance("xport");
let internet: FakeInternet;
let server: ServerProcess;
let caDir: string;
const created: Sandbox[] = [];

const opts = () => sdkOptions(server.url, server.url, server.apiKey);

const api = (method: string, path: string, body?: unknown) => keyedApi(server.url, server.apiKey)(method, path, body);

const rule = (headers: Record<string, string>) => [{ transform: { headers } }];

async function spawn(network: Record<string, unknown>): Promise<Sandbox> {
  const sandbox = await Sandbox.create("base", { ...opts(), timeoutMs: 300_000, network: network as never });
  created.push(sandbox);
  return sandbox;
}

async function sh(sandbox: Sandbox, command: string): Promise<string> {
  internet.assertRouted();
  const r = await sandbox.commands.run(`${command} 2>&1 || true`, { timeoutMs: 60_000 });
  return r.stdout.trim();
}

/** The values of header `name` the fake host saw for `url` (curl with the sandbox's system store, plus `extra`). */
async function seen(sandbox: Sandbox, url: string, name: string, extra = ""): Promise<string[]> {
  const out = await sh(sandbox, `curl -s -m 10 ${extra} ${url}`);
  let raw: string[];
  try {
    raw = JSON.parse(out) as string[];
  } catch {
    throw new Error(`not a header list from ${url}: ${out}`);
  }
  const values: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) if (raw[i]!.toLowerCase() === name.toLowerCase()) values.push(raw[i + 1]!);
  return values;
}

const issuer = (sandbox: Sandbox, url: string, extra = "") => sh(sandbox, `curl -sv -m 10 ${extra} -o /dev/null ${url} 2>&1 | grep -i 'issuer:'`);

describe("egress header transforms on named ports (own server, fake internet)", () => {
  beforeAll(async () => {
    internet = await startFakeInternet([A], { names: NAMES });
    caDir = mkdtempSync(join(tmpdir(), "burrow-xport-ca-"));
    writeFileSync(join(caDir, "fake-ca.pem"), internet.caCert!);
    server = await startServerProcess(instance, await freePort(), ["--pool-size", "0"], {
      BURROW_DNS_UPSTREAM: DNS_ADDRESS,
      BURROW_EGRESS_UPSTREAM_CA: join(caDir, "fake-ca.pem"),
    });
    expect((await api("POST", "/secrets", { name: SECRET, value: VALUE })).status).toBe(201);
  });

  afterAll(async () => {
    await tearDownServers([{ instance, server }], {
      before: [() => Promise.all(created.map((s) => s.kill().catch(() => undefined)))],
      after: [() => caDir && rmSync(caDir, { recursive: true, force: true }), () => internet?.close()],
    });
  });

  it("a host:port key applies on that port only (HTTPS intercepted there, HTTP too), a plain key on 80/443 only", async () => {
    const sandbox = await spawn({
      rules: {
        "api.test:8443": rule({ "X-Port": `\${e2b.secrets.${SECRET}}` }),
        "*.wild.test:8080": rule({ "X-Port": "wild-8080" }),
        "api.test": rule({ "X-Web": "web" }),
      },
    });
    expect(await seen(sandbox, "https://api.test:8443/headers", "x-port")).toEqual([VALUE]);
    expect(await seen(sandbox, "https://api.test:8443/headers", "x-web")).toEqual([]);
    expect(await issuer(sandbox, "https://api.test:8443/headers")).toMatch(/Burrow egress CA/);
    expect(await seen(sandbox, "http://a.wild.test:8080/headers", "x-port")).toEqual(["wild-8080"]);
    expect(await seen(sandbox, "https://api.test/headers", "x-web")).toEqual(["web"]);
    expect(await seen(sandbox, "https://api.test/headers", "x-port")).toEqual([]);
    expect(await seen(sandbox, "http://api.test/headers", "x-web")).toEqual(["web"]);
    // 8080 of api.test: no key names it there, so nothing is set (the plain key is for 80/443).
    expect(await seen(sandbox, "http://api.test:8080/headers", "x-web")).toEqual([]);
    // 8443 of a host no key names for 8443: spliced, the fake host's own certificate.
    await sandbox.files.write("/tmp/fake-ca.pem", internet.caCert!);
    expect(await issuer(sandbox, "https://x.wild.test:8443/", "--cacert /tmp/fake-ca.pem")).toMatch(/fake internet test CA/);
    // The audit names the port.
    const audit = await api("GET", `/burrow/v1/sandboxes/${sandbox.sandboxId}/egress`);
    expect(JSON.stringify(audit.json)).toContain('"port":8443');
  });

  it("an update that drops the port's key stops the interception there; one that adds it starts it", async () => {
    const sandbox = await spawn({ rules: { "api.test:8443": rule({ "X-Port": "first" }) } });
    expect(await seen(sandbox, "https://api.test:8443/headers", "x-port")).toEqual(["first"]);
    await sandbox.updateNetwork({ rules: { "api.test": rule({ "X-Web": "web" }) } } as never);
    await sandbox.files.write("/tmp/fake-ca.pem", internet.caCert!);
    expect(await issuer(sandbox, "https://api.test:8443/", "--cacert /tmp/fake-ca.pem")).toMatch(/fake internet test CA/);
    await sandbox.updateNetwork({ rules: { "api.test:8080": rule({ "X-Port": "second" }) } } as never);
    expect(await seen(sandbox, "http://api.test:8080/headers", "x-port")).toEqual(["second"]);
    expect((await api("GET", `/sandboxes/${sandbox.sandboxId}`)).json.network.rules).toEqual({ "api.test:8080": rule({ "X-Port": "second" }) });
  });

  it("a bad port in a key is a 400 naming it, and a failed update keeps the old rules", async () => {
    for (const key of ["api.test:0", "api.test:65536", "api.test:http"]) {
      const r = await api("POST", "/sandboxes", { templateID: "base", network: { rules: { [key]: rule({ A: "b" }) } } });
      expect(r, key).toMatchObject({ status: 400, json: { code: 400, message: expect.stringContaining(`'${key}'`) } });
    }
    // httpsPorts is E2B's ingress setting (sandbox ports serving HTTPS): its bad values are named too.
    for (const port of [70000, 0, 49983]) {
      const r = await api("POST", "/sandboxes", { templateID: "base", network: { httpsPorts: [8443, port] } });
      expect(r, String(port)).toMatchObject({ status: 400, json: { message: expect.stringContaining(`'${port}'`) } });
    }
    const sandbox = await spawn({ rules: { "api.test:8443": rule({ "X-Port": "kept" }) } });
    const put = await api("PUT", `/sandboxes/${sandbox.sandboxId}/network`, { rules: { "api.test:99999": rule({ "X-Port": "x" }) } });
    expect(put).toMatchObject({ status: 400, json: { message: expect.stringContaining("'api.test:99999'") } });
    expect(await seen(sandbox, "https://api.test:8443/headers", "x-port")).toEqual(["kept"]);
  });
});
