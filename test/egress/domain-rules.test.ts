// Domain rules that hold, with the official SDK against a Burrow server of this file's own (its resolver's upstream
// is the fake internet's DNS server): Burrow's resolver answers NXDOMAIN for denied names without asking upstream;
// a connection to an address the resolver gave for an allowed name takes the direct path (the kernel forwards it once
// the egress judge has read its SNI or Host; a name the judge was not given is judged by the rules and must resolve
// to that address, else both ends are reset); any other connection goes to the transparent egress proxy, which
// judges TLS SNI and HTTP Host and connects where the name points (IP literals, SNI/Host mismatches and DNS
// rebinding gain nothing); QUIC is dropped, updates apply live, every connection and refusal is audited (REST and
// bus, `via` saying which path), host services answer by name, and the rules survive a server restart.
// Every name ends in .test and every address is the fake internet's (203.0.113.0/24) or this server's gateway.
import { execFileSync } from "node:child_process";
import { createServer, type Server } from "node:http";
import { rmSync } from "node:fs";
import { ALL_TRAFFIC, Sandbox } from "e2b";
import { BusClient } from "@burrow/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DNS_ADDRESS, type FakeInternet, startFakeInternet } from "../helpers/fake-internet.js";
import { burrowDown, freePort, startServerProcess, stopServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { newTestInstance } from "../helpers/test-instance.js";

const A = "203.0.113.10"; // allowed.test, *.wild.test, other.test
const B = "203.0.113.20"; // denied.test
const NAMES = {
  "allowed.test": A,
  "denied.test": B,
  "other.test": A,
  "*.wild.test": A,
  // DNS rebinding: A at the first A query, B from then on.
  "rebind.test": [A, B],
};

const instance = newTestInstance("egress");
// The gateway of the instance's subnet (its first address), where host services are reached.
const gateway = instance.subnet.replace(/\.0\.0\/16$/, ".0.1");
let internet: FakeInternet;
let server: ServerProcess;
let port: number;
let service: Server;
let servicePort: number;
const created: Sandbox[] = [];

const opts = () => ({ apiKey: server.apiKey, apiUrl: server.url, sandboxUrl: server.url, debug: false as const });

async function spawn(network?: { allowOut?: string[]; denyOut?: string[] }): Promise<Sandbox> {
  const sandbox = await Sandbox.create("base", { ...opts(), timeoutMs: 300_000, ...(network ? { network } : {}) });
  created.push(sandbox);
  await sandbox.files.write("/tmp/ca.pem", internet.caCert!);
  await sandbox.files.write("/tmp/dnsq.py", DNS_QUERY);
  return sandbox;
}

async function sh(sandbox: Sandbox, command: string): Promise<string> {
  internet.assertRouted();
  const r = await sandbox.commands.run(`${command} 2>&1 || true`, { timeoutMs: 60_000 });
  return r.stdout.trim();
}

/** `<body> <status>` of an HTTP(S) GET from the sandbox; status 000 when the connection failed or was closed. */
const get = (sandbox: Sandbox, url: string, extra = "") => sh(sandbox, `curl -s -m 5 --cacert /tmp/ca.pem ${extra} -w ' %{http_code}' ${url}`);

/**
 * A Python client that resolves allowed.test (Burrow's resolver), connects to its address and writes a request head
 * naming `host` in two writes `gapS` apart (Nagle on), then prints the status line, "closed" or "reset".
 */
function headInTwoWrites(host: string, gapS: number): string {
  return `import socket, time
s = socket.create_connection((socket.gethostbyname("allowed.test"), 80), timeout=10)
s.sendall(b"GET / HTTP/1.1\\r\\nHo")
time.sleep(${gapS})
s.sendall(b"st: ${host}\\r\\nConnection: close\\r\\n\\r\\n")
try:
    print(s.recv(4096).split(b"\\r\\n")[0].decode() or "closed")
except ConnectionResetError:
    print("reset")
`;
}

/** The sandbox's egress audit, oldest first. */
async function egressEvents(sandbox: Sandbox): Promise<any[]> {
  const res = await fetch(`${server.url}/burrow/v1/sandboxes/${sandbox.sandboxId}/egress?limit=100`, { headers: { "x-api-key": server.apiKey } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { events: any[] }).events;
}

/** The RCODE and the Extended DNS Error text of an A query to the sandbox's resolver, e.g. `3 denied by …`. */
const rcode = (sandbox: Sandbox, name: string) => sh(sandbox, `python3 /tmp/dnsq.py ${name}`);

// A raw A query with EDNS (so that the resolver can say why), to the first name server in /etc/resolv.conf.
const DNS_QUERY = `import re, socket, struct, sys, random
ns = [l.split()[1] for l in open("/etc/resolv.conf") if l.startswith("nameserver")][0]
name = sys.argv[1]
q = struct.pack(">HHHHHH", random.randrange(65536), 0x0100, 1, 0, 0, 1)
q += b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\\0" + struct.pack(">HH", 1, 1)
q += b"\\0" + struct.pack(">HHIH", 41, 1232, 0, 0)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
s.sendto(q, (ns, 53))
r = s.recv(4096)
flags, qd, an, ns_, ar = struct.unpack(">HHHHH", r[2:12])
m = re.search(rb"\\x00\\x0f(..)\\x00\\x0f", r[12:], re.S)
text = r[12:][m.end():m.end() + struct.unpack(">H", m.group(1))[0] - 2].decode() if m else ""
print(flags & 15, an, text)
`;

describe("egress domain rules (own server, fake internet with DNS)", () => {
  beforeAll(async () => {
    internet = await startFakeInternet([A, B], { names: NAMES });
    port = await freePort();
    servicePort = await freePort();
    server = await startServerProcess(instance, port, ["--pool-size", "0"], {
      BURROW_DNS_UPSTREAM: DNS_ADDRESS,
      BURROW_HOST_SERVICES: `svc.burrow=${servicePort}`,
    });
    // The host service, on the gateway address (the bridge exists once the server is up).
    service = createServer((req, res) => res.end(`service saw ${req.socket.remoteAddress} ask for ${req.headers.host}`));
    await new Promise<void>((resolve) => service.listen(servicePort, gateway, resolve));
  });

  afterAll(async () => {
    // Every step runs whatever an earlier one did (a failing `burrow down` must not strand the fake internet).
    try {
      await Promise.all(created.map((s) => s.kill().catch(() => undefined)));
      if (server) await stopServerProcess(server, "SIGTERM");
      service?.closeAllConnections();
      await new Promise((resolve) => (service ? service.close(resolve) : resolve(undefined)));
      burrowDown(instance);
      rmSync(instance.stateDir, { recursive: true, force: true });
    } finally {
      await internet?.close();
    }
  });

  it("allow a domain, deny ALL_TRAFFIC: the domain over HTTP and HTTPS, nothing else (NXDOMAIN, never asked upstream)", async () => {
    const sandbox = await spawn({ allowOut: ["allowed.test"], denyOut: [ALL_TRAFFIC] });
    expect(await get(sandbox, "http://allowed.test/")).toBe(`hello from ${A} 200`);
    expect(await get(sandbox, "https://allowed.test/")).toBe(`hello from ${A} 200`);
    expect(await rcode(sandbox, "allowed.test")).toMatch(/^0 1/);
    expect(await rcode(sandbox, "denied.test")).toBe("3 0 denied by network rule ALL_TRAFFIC");
    expect(internet.dnsQueries()).not.toContain("denied.test");
    expect(await get(sandbox, "http://denied.test/")).toBe("000");
    // Reaching the denied host by address, or by name with the address given: refused by the proxy.
    expect(await get(sandbox, `http://${B}/`)).toMatch(/denied \(ALL_TRAFFIC\)\n? 403$/);
    expect(await get(sandbox, "http://denied.test/", `--resolve denied.test:80:${B}`)).toMatch(/ 403$/);
    expect(await get(sandbox, "https://denied.test/", `--resolve denied.test:443:${B}`)).toBe("000");
  });

  it("a wildcard allows the names below it, not others", async () => {
    const sandbox = await spawn({ allowOut: ["*.wild.test"], denyOut: [ALL_TRAFFIC] });
    expect(await get(sandbox, "https://a.wild.test/")).toBe(`hello from ${A} 200`);
    expect(await get(sandbox, "http://b.c.wild.test/")).toBe(`hello from ${A} 200`);
    expect(await rcode(sandbox, "other.test")).toMatch(/^3 0/);
    // A is the address of the allowed names looked up above, so this connection goes direct: the judge reads a name
    // it was not given, the rules deny it, and both ends are reset.
    expect(await get(sandbox, "http://other.test/", `--resolve other.test:80:${A}`)).toBe("000");
    await expect.poll(async () => (await egressEvents(sandbox)).at(-1), { timeout: 10_000 }).toMatchObject({ via: "direct", verdict: "denied", host: "other.test", ip: A, rule: "ALL_TRAFFIC" });
  });

  it("allow wins over deny; names no rule names follow the internet switch", async () => {
    const sandbox = await spawn({ allowOut: ["allowed.test"], denyOut: ["allowed.test", "denied.test"] });
    expect(await get(sandbox, "https://allowed.test/")).toBe(`hello from ${A} 200`);
    expect(await rcode(sandbox, "denied.test")).toBe("3 0 denied by network rule denied.test");
    expect(await get(sandbox, "http://other.test/")).toBe(`hello from ${A} 200`);
  });

  it("an allowed host's address with a denied Host or SNI is refused", async () => {
    const sandbox = await spawn({ allowOut: ["allowed.test", A], denyOut: ["denied.test", ALL_TRAFFIC] });
    expect(await get(sandbox, `http://${A}/`)).toBe(`hello from ${A} 200`);
    expect(await get(sandbox, `http://${A}/`, "-H 'Host: denied.test'")).toMatch(/denied \(denied\.test\)\n? 403$/);
    expect(await get(sandbox, "https://denied.test/", `--resolve denied.test:443:${A}`)).toBe("000");
  });

  it("an SNI/Host that does not match the address goes to the name's own address, never the one the sandbox chose", async () => {
    const sandbox = await spawn({ allowOut: ["allowed.test"], denyOut: [ALL_TRAFFIC] });
    expect(await get(sandbox, "https://allowed.test/", `--resolve allowed.test:443:${B}`)).toBe(`hello from ${A} 200`);
    expect(await get(sandbox, "http://allowed.test/", `--resolve allowed.test:80:${B}`)).toBe(`hello from ${A} 200`);
  });

  it("DNS rebinding grants nothing: only addresses judged when the resolver gave them go direct, the proxy resolves again", async () => {
    const sandbox = await spawn({ denyOut: ["denied.test", B] });
    // The first lookup gets A, allowed by address: that pair goes direct.
    expect(await get(sandbox, "http://rebind.test/")).toBe(`hello from ${A} 200`);
    await expect.poll(async () => (await egressEvents(sandbox)).at(-1), { timeout: 10_000 }).toMatchObject({ via: "direct", verdict: "allowed", host: "rebind.test", ip: A });
    // The next gets B, denied by address: not a direct pair, so the proxy takes it, resolves the name itself (B) and refuses.
    expect(await get(sandbox, "http://rebind.test/")).toMatch(new RegExp(`denied \\(${B.replaceAll(".", "\\.")}/32\\)\\n? 403$`));
    expect(await get(sandbox, `http://${B}/`)).toMatch(/ 403$/);
  });

  it("a connection to an address the resolver gave for an allowed name goes direct: an unfinished head may reach the host, a finished one only once its Host is judged; a denied Host resets both ends", async () => {
    const sandbox = await spawn({ allowOut: ["allowed.test"], denyOut: ["denied.test", ALL_TRAFFIC] });
    // Resolves allowed.test (Burrow's resolver), connects to its address, sends half a request head, waits, then
    // finishes it with a denied Host. (The judge lets a head that stopped growing go on while it is unfinished: a
    // client that writes it in two small writes sends the second only once the first is acknowledged.)
    await sandbox.files.write("/tmp/early.py", headInTwoWrites("denied.test", 4));
    // The fake host's established connections on port 80, each `<peer> <bytes it received>`.
    const atHost = () =>
      execFileSync("ip", ["netns", "exec", internet.netns, "ss", "-Htni", "state", "established", "( sport = :80 )"], { encoding: "utf8" })
        .split("\n")
        .reduce<string[]>((out, line) => {
          if (/^\S/.test(line)) out.push(line.trim().split(/\s+/)[3] ?? "");
          else if (out.length > 0) out[out.length - 1] += ` ${/bytes_received:(\d+)/.exec(line)?.[1] ?? "0"}`;
          return out;
        }, []);
    expect(atHost()).toEqual([]);
    const run = await sandbox.commands.run("python3 /tmp/early.py", { background: true, timeoutMs: 60_000 });
    let seen: string[] = [];
    for (let i = 0; i < 30 && seen.length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      seen = atHost();
    }
    // The host has the connection while the client has not finished its head, and at most that unfinished head.
    expect(seen).toHaveLength(1);
    expect(Number(seen[0]!.split(" ")[1])).toBeLessThanOrEqual("GET / HTTP/1.1\r\nHo".length);
    const out = await run.wait();
    expect(out.stdout.trim()).toBe("reset");
    await expect.poll(async () => (await egressEvents(sandbox)).at(-1), { timeout: 10_000 }).toMatchObject({ via: "direct", verdict: "denied", host: "denied.test", ip: A, rule: "denied.test" });
    for (let i = 0; i < 30 && atHost().length > 0; i++) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(atHost()).toEqual([]);
    // And the early connection serves an allowed name as any other.
    expect(await get(sandbox, "http://allowed.test/")).toBe(`hello from ${A} 200`);
    // A head in two small writes (Nagle on) with an allowed Host is answered.
    await sandbox.files.write("/tmp/split.py", headInTwoWrites("allowed.test", 0.05));
    expect(await sh(sandbox, "python3 /tmp/split.py")).toBe("HTTP/1.1 200 OK");
    await expect.poll(async () => (await egressEvents(sandbox)).at(-1), { timeout: 10_000 }).toMatchObject({ via: "direct", verdict: "allowed", host: "allowed.test", ip: A });
  });

  it("QUIC (UDP 443) is dropped for sandboxes with domain rules; other UDP is not", async () => {
    const probe = (sandbox: Sandbox, p: number) =>
      sh(
        sandbox,
        `python3 -c "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2); s.connect(('${A}', ${p}))
try:
    s.send(b'x'); s.recv(1); print('answered')
except ConnectionRefusedError: print('refused')
except socket.timeout: print('dropped')"`,
      );
    const plain = await spawn();
    expect(await probe(plain, 443)).toBe("refused");
    const ruled = await spawn({ allowOut: ["allowed.test"] });
    expect(await probe(ruled, 443)).toBe("dropped");
    expect(await probe(ruled, 4443)).toBe("refused");
  });

  it("updateNetwork switches domain rules live, and a malformed domain is a 400 that keeps the old rules", async () => {
    const sandbox = await spawn();
    expect(await get(sandbox, "http://denied.test/")).toBe(`hello from ${B} 200`);
    await sandbox.updateNetwork({ allowOut: ["allowed.test"], denyOut: [ALL_TRAFFIC] });
    expect(await rcode(sandbox, "denied.test")).toMatch(/^3 0/);
    expect(await get(sandbox, `http://${B}/`)).toMatch(/ 403$/);
    expect(await get(sandbox, "http://allowed.test/")).toBe(`hello from ${A} 200`);
    await expect(sandbox.updateNetwork({ allowOut: ["allowed..test"], denyOut: [] })).rejects.toThrow(/allowed\.\.test/);
    expect(await get(sandbox, `http://${B}/`)).toMatch(/ 403$/);
    await sandbox.updateNetwork({});
    expect(await get(sandbox, "http://denied.test/")).toBe(`hello from ${B} 200`);
  });

  it("audits allowed and denied connections: REST per sandbox and net events on the bus", async () => {
    const bus = new BusClient({ baseUrl: server.url, apiKey: server.apiKey });
    const sandbox = await spawn({ allowOut: ["allowed.test"], denyOut: [ALL_TRAFFIC] });
    const sub = await bus.bus.subscribe(`sbx.*.${sandbox.sandboxId}.net.*`);
    const seen: { subject: string; body: any }[] = [];
    const arrivals: (() => void)[] = [];
    void (async () => {
      for await (const m of sub) {
        seen.push({ subject: m.subject, body: JSON.parse(new TextDecoder().decode(m.data)) });
        arrivals.shift()?.();
      }
    })();
    const seenCount = (n: number) =>
      Promise.race([
        (async () => {
          while (seen.length < n) await new Promise<void>((resolve) => arrivals.push(resolve));
        })(),
        new Promise((_, reject) => setTimeout(() => reject(new Error(`bus events: ${JSON.stringify(seen)}`)), 20_000)),
      ]);
    // Direct (the name was looked up): audited when the connection has closed, with the kernel's byte counts.
    expect(await get(sandbox, "http://allowed.test/")).toBe(`hello from ${A} 200`);
    await seenCount(1);
    // Through the proxy (an address no name was looked up for), refused there.
    expect(await get(sandbox, `http://${B}/`)).toMatch(/ 403$/);
    await seenCount(2);
    sub.close();
    expect(seen.map((s) => s.subject.split(".").slice(3).join("."))).toEqual(["net.allowed", "net.denied"]);
    expect(seen[0]!.body).toMatchObject({ sandboxId: sandbox.sandboxId, host: "allowed.test", ip: A, port: 80, verdict: "allowed", rule: "allowed.test" });
    expect(seen[0]!.body.bytesIn).toBeGreaterThan(`hello from ${A}`.length);
    expect(seen[1]!.body).toMatchObject({ host: B, port: 80, verdict: "denied", rule: "ALL_TRAFFIC" });

    await rcode(sandbox, "denied.test");
    const res = await fetch(`${server.url}/burrow/v1/sandboxes/${sandbox.sandboxId}/egress?limit=10`, { headers: { "x-api-key": server.apiKey } });
    expect(res.status).toBe(200);
    const { events } = (await res.json()) as { events: any[] };
    expect(events.map((e) => [e.via, e.verdict, e.host])).toEqual([
      ["direct", "allowed", "allowed.test"],
      ["proxy", "denied", B],
      ["dns", "denied", "denied.test"],
    ]);
    const bad = await fetch(`${server.url}/burrow/v1/sandboxes/${sandbox.sandboxId}/egress?limit=0`, { headers: { "x-api-key": server.apiKey } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { code: number }).code).toBe(400);
  });

  it("a host service answers by name (resolver and /etc/hosts) from any sandbox, seeing the sandbox's address", async () => {
    const sandbox = await spawn({ allowOut: ["allowed.test"], denyOut: [ALL_TRAFFIC] });
    const ip = await sh(sandbox, "hostname -I");
    expect(await get(sandbox, "http://svc.burrow/")).toBe(`service saw ${ip.trim()} ask for svc.burrow 200`);
    expect(await sh(sandbox, "grep svc.burrow /etc/hosts")).toBe(`${gateway}\tsvc.burrow`);
    expect(await rcode(sandbox, "svc.burrow")).toMatch(/^0 1/);
    // Only the DNAT'ed port reaches the host: the service's own port on the gateway does not.
    expect(await get(sandbox, `http://${gateway}:${servicePort}/`)).toBe("000");
  });

  it("domain rules survive a server restart", async () => {
    const sandbox = await spawn({ allowOut: ["allowed.test"], denyOut: [ALL_TRAFFIC] });
    await stopServerProcess(server, "SIGKILL");
    server = await startServerProcess(instance, port, ["--pool-size", "0"], {
      BURROW_DNS_UPSTREAM: DNS_ADDRESS,
      BURROW_HOST_SERVICES: `svc.burrow=${servicePort}`,
    });
    const again = await Sandbox.connect(sandbox.sandboxId, opts());
    expect(await rcode(again, "denied.test")).toMatch(/^3 0/);
    expect(await get(again, "https://allowed.test/")).toBe(`hello from ${A} 200`);
    expect(await get(again, `http://${B}/`)).toMatch(/ 403$/);
  });
});
