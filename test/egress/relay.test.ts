// The egress proxy's kernel relay end to end, with the official SDK against a Burrow server of this file's own: a
// sandbox whose rules name a domain has its TCP 443 DNAT'ed to the proxy, which reads the SNI (here an address the
// rules allow), and hands the connection to the splice relay (the server's `burrow-relay` thread). Behind it, a raw
// upstream in the fake internet's namespace hashes everything it receives (the ClientHello the proxy peeked
// included) once the client has shut down its sending side, then answers the hash and a body of a requested size.
// Checked: a large transfer both ways is byte-exact, half-close gets the answer, many concurrent connections, the
// audit records the bytes, and the server's open descriptors (pipes included) come back to where they were.
// Every address is the fake internet's (203.0.113.0/24) or this server's own.
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import { ALL_TRAFFIC, Sandbox } from "e2b";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeInternet, startFakeInternet } from "../helpers/fake-internet.js";
import { burrowDown, freePort, startServerProcess, stopServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { newTestInstance } from "../helpers/test-instance.js";

const R = "203.0.113.30";

const instance = newTestInstance("relay");
let internet: FakeInternet;
let upstream: ChildProcess | undefined;
let server: ServerProcess;
let sandbox: Sandbox;

// In the fake internet's namespace, on 443 (free: without names the fake internet serves only HTTP on 80). After
// the TLS record of the ClientHello, the client names the size of the answer (12 ASCII digits).
const UPSTREAM = `const net=require("net"),crypto=require("crypto");
net.createServer({allowHalfOpen:true},(s)=>{const chunks=[];s.on("data",(d)=>chunks.push(d));s.on("error",()=>{});
s.on("end",()=>{const all=Buffer.concat(chunks);const l=all.readUInt16BE(3);const down=Number(all.subarray(5+l,17+l).toString("latin1"));
const body=Buffer.alloc(down);for(let i=0;i<down;i++)body[i]=i%251;
s.write(crypto.createHash("sha256").update(all).digest("hex")+"\\n");s.end(body)})}).listen(443,"0.0.0.0",()=>console.log("listening"));`;

// In the sandbox: `count` connections at once, each a ClientHello naming the host, the answer's size, `up` random
// bytes, shutdown(SHUT_WR), then everything until EOF. One line per connection: sha256 sent, the upstream's sha256
// of what it got, sha256 and length of the answer's body.
const CLIENT = `import hashlib, os, socket, struct, sys, threading
host, up, down, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def hello(name):
    n = name.encode()
    sni = struct.pack(">HHHBH", 0, len(n) + 5, len(n) + 3, 0, len(n)) + n
    body = b"\\x03\\x03" + os.urandom(32) + b"\\x00" + struct.pack(">H", 2) + b"\\x13\\x01" + b"\\x01\\x00" + struct.pack(">H", len(sni)) + sni
    hs = b"\\x01" + struct.pack(">I", len(body))[1:] + body
    return b"\\x16\\x03\\x01" + struct.pack(">H", len(hs)) + hs
def one(out, i):
    try:
        s = socket.create_connection((host, 443), timeout=120)
        first = hello(host) + b"%012d" % down
        sent = hashlib.sha256(first)
        s.sendall(first)
        left = up
        while left > 0:
            c = os.urandom(min(left, 1 << 20))
            s.sendall(c)
            sent.update(c)
            left -= len(c)
        s.shutdown(socket.SHUT_WR)
        buf = bytearray()
        while True:
            d = s.recv(1 << 20)
            if not d: break
            buf += d
        s.close()
        nl = buf.index(b"\\n")
        out[i] = "%s %s %s %d" % (sent.hexdigest(), buf[:nl].decode(), hashlib.sha256(buf[nl + 1:]).hexdigest(), len(buf) - nl - 1)
    except Exception as e:
        out[i] = "error %r" % e
out = [None] * count
threads = [threading.Thread(target=one, args=(out, i)) for i in range(count)]
for t in threads: t.start()
for t in threads: t.join()
print("\\n".join(out))
`;

const expectedBody = (n: number) => {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = i % 251;
  return createHash("sha256").update(b).digest("hex");
};

const opts = () => ({ apiKey: server.apiKey, apiUrl: server.url, sandboxUrl: server.url, debug: false as const });

async function exchange(up: number, down: number, count: number): Promise<string[]> {
  internet.assertRouted();
  const r = await sandbox.commands.run(`python3 /tmp/client.py ${R} ${up} ${down} ${count}`, { timeoutMs: 300_000 });
  const lines = r.stdout.trim().split("\n");
  expect(lines).toHaveLength(count);
  for (const line of lines) {
    const [sent, upstreamGot, bodyHash, bodyLength] = line.split(" ");
    expect(upstreamGot, line).toBe(sent);
    expect(Number(bodyLength), line).toBe(down);
    expect(bodyHash, line).toBe(expectedBody(down));
  }
  return lines;
}

const pid = () => server.child.pid!;
const fds = () => readdirSync(`/proc/${pid()}/fd`);
const pipes = () => fds().filter((fd) => readlinkSafe(`/proc/${pid()}/fd/${fd}`).startsWith("pipe:")).length;
const readlinkSafe = (p: string) => {
  try {
    return readlinkSync(p);
  } catch {
    return "";
  }
};
const links = () => fds().map((fd) => readlinkSafe(`/proc/${pid()}/fd/${fd}`)).sort().join(" ");
const threadNames = () => readdirSync(`/proc/${pid()}/task`).map((t) => readFileSafe(`/proc/${pid()}/task/${t}/comm`).trim());
const readFileSafe = (p: string) => {
  try {
    return readFileSync(p, "utf8");
  } catch {
    return "";
  }
};

async function egressEvents(): Promise<{ host?: string; port?: number; verdict: string; bytesOut: number; bytesIn: number }[]> {
  const res = await fetch(`${server.url}/burrow/v1/sandboxes/${sandbox.sandboxId}/egress?limit=1000`, { headers: { "x-api-key": server.apiKey } });
  return ((await res.json()) as { events: any[] }).events;
}

describe("egress proxy: the kernel relay (own server, fake internet)", () => {
  beforeAll(async () => {
    internet = await startFakeInternet([R]);
    upstream = spawn("ip", ["netns", "exec", internet.netns, process.execPath, "-e", UPSTREAM], { stdio: ["ignore", "pipe", "inherit"] });
    await new Promise<void>((resolve, reject) => {
      upstream!.stdout!.once("data", () => resolve());
      upstream!.once("exit", (code) => reject(new Error(`the upstream exited (${code})`)));
    });
    server = await startServerProcess(instance, await freePort(), ["--pool-size", "0"]);
    // A domain entry puts the sandbox's 80/443 through the proxy; the address entry allows the SNI it sends.
    sandbox = await Sandbox.create("base", { ...opts(), timeoutMs: 600_000, network: { allowOut: ["relay.test", R], denyOut: [ALL_TRAFFIC] } });
    await sandbox.files.write("/tmp/client.py", CLIENT);
  });

  afterAll(async () => {
    try {
      await sandbox?.kill().catch(() => undefined);
      if (server) await stopServerProcess(server, "SIGTERM");
      burrowDown(instance);
      rmSync(instance.stateDir, { recursive: true, force: true });
    } finally {
      if (upstream?.pid !== undefined && upstream.exitCode === null) {
        const exited = new Promise((resolve) => upstream!.once("exit", resolve));
        upstream.kill("SIGKILL");
        await exited;
      }
      await internet?.close();
    }
  });

  it("64 MiB each way are byte-exact, the client's half-close gets the answer, the relay thread carried it, the audit has the bytes", async () => {
    expect(threadNames()).not.toContain("burrow-relay");
    await exchange(64 * 2 ** 20, 64 * 2 ** 20, 1);
    expect(threadNames()).toContain("burrow-relay");
    const events = (await egressEvents()).filter((e) => e.port === 443);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ host: R, verdict: "allowed", bytesIn: 64 * 2 ** 20 + 65 });
    // The ClientHello (its size depends on the name), 12 digits, the body.
    expect(events[0]!.bytesOut - 64 * 2 ** 20 - 12).toBeGreaterThan(40);
  });

  it("50 connections at once are byte-exact and audited, and the server's descriptors (the relay's pipes included) come back to where they were", async () => {
    // Settled after the previous test (the relay's own epoll and eventfd are there from its first connection).
    const settle = async (want: () => boolean) => {
      for (let i = 0; i < 100 && !want(); i++) await new Promise((r) => setTimeout(r, 100));
    };
    const auditedBefore = (await egressEvents()).filter((e) => e.port === 443).length;
    const before = { fds: fds().length, pipes: pipes(), links: links() };
    // Sampled while the connections run: the relay's pipes (two per connection) appear, and go again below.
    let peakPipes = before.pipes;
    const sampler = setInterval(() => (peakPipes = Math.max(peakPipes, pipes())), 10);
    try {
      await exchange(1024 * 1024, 2 * 1024 * 1024, 50);
    } finally {
      clearInterval(sampler);
    }
    expect(peakPipes).toBeGreaterThanOrEqual(before.pipes + 4);
    let events: Awaited<ReturnType<typeof egressEvents>> = [];
    for (let i = 0; i < 50; i++) {
      events = (await egressEvents()).filter((e) => e.port === 443);
      if (events.length >= auditedBefore + 50) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(events.slice(auditedBefore)).toHaveLength(50);
    for (const e of events.slice(auditedBefore)) expect(e).toMatchObject({ verdict: "allowed", bytesIn: 2 * 1024 * 1024 + 65 });
    await settle(() => pipes() === before.pipes && fds().length <= before.fds);
    expect(pipes()).toBe(before.pipes);
    expect(fds().length, `before: ${before.links}\nafter: ${links()}`).toBeLessThanOrEqual(before.fds);
  });
});
