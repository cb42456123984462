// The egress proxy's kernel relay (egress/native-relay.ts, native/relay) on loopback, through the real proxy
// (startEgressProxy with loopback allowed): a client sends an HTTP request head and a body, shuts down its sending
// side and still receives the answer (half-close); the upstream server checks the hash of everything that reached
// it (the head Node peeked included) and answers with a body of its own, hashed by the client. Byte counts reach
// the audit; the connections are carried by the addon's thread (proxy.relayed), many at once; the process's open
// descriptors come back to where they were; close() ends relayed connections; through a user's SOCKS5 proxy, bytes
// that arrived with its handshake are not lost. The JS relay (the config's egressRelay "js") passes the same
// exchanges, slow readers included.
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { readdirSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EgressAudit, type EgressRecord } from "../src/egress/egress-audit.js";
import { startEgressProxy, type EgressProxy } from "../src/egress/egress-proxy.js";
import { loadRelayAddon, socketReadNow, type RelayKind } from "../src/egress/native-relay.js";
import { dialThroughUserProxy } from "../src/egress/tunnel-proxy.js";
import { parseUpstreamProxy } from "../src/egress/upstream-proxy.js";

const sha = (...parts: Buffer[]) => parts.reduce((h, p) => h.update(p), createHash("sha256")).digest("hex");

let upstream: Server;
let upstreamPort: number;
/** Sampled by the upstream server when a client's EOF reaches it (the connection still open both ways). */
let onUpstreamEof: () => void = () => undefined;
/** Connections the upstream server holds open without answering (the close() test). */
const held: Socket[] = [];

/**
 * The upstream: reads to EOF, answers `<sha256 of all it got>\n` and then `down` bytes (from the request's path
 * /x?down=N, a deterministic pattern), then ends. Path /hold: never answers, never closes.
 */
function startUpstream(): Promise<void> {
  upstream = createServer({ allowHalfOpen: true }, (s) => {
    const chunks: Buffer[] = [];
    s.on("data", (d: Buffer) => {
      chunks.push(d);
      if (chunks.length === 1 && d.includes("/hold")) held.push(s);
    });
    s.on("error", () => undefined);
    s.on("end", () => {
      if (held.includes(s)) return; // /hold: not even the client's EOF gets an answer
      onUpstreamEof();
      const got = Buffer.concat(chunks);
      const down = Number(/down=(\d+)/.exec(got.subarray(0, 200).toString("latin1"))?.[1] ?? 0);
      s.write(`${sha(got)}\n`);
      s.end(pattern(down));
    });
  });
  return new Promise((resolve) => upstream.listen(0, "127.0.0.1", () => resolve()));
}

const pattern = (n: number) => {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i += 4) b.writeUInt32LE(i >>> 0, i - (i + 4 > n ? i + 4 - n : 0));
  return b;
};

interface Exchange {
  sentHash: string;
  upstreamHash: string;
  body: Buffer;
}

/** Head + `up` random bytes, half-close, read the answer to the end (`slow`: pausing 2 ms after every chunk). */
function exchange(proxyPort: number, up: number, down: number, slow = false, path = `/x?down=${down}`): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const head = Buffer.from(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    const body = randomBytes(up);
    const socket = connect({ port: proxyPort, host: "127.0.0.1", allowHalfOpen: true });
    const got: Buffer[] = [];
    socket.on("data", (d: Buffer) => {
      got.push(d);
      if (!slow) return;
      socket.pause();
      setTimeout(() => socket.resume(), 2);
    });
    socket.on("error", reject);
    socket.on("end", () => {
      socket.end();
      const all = Buffer.concat(got);
      const nl = all.indexOf(10);
      resolve({ sentHash: sha(head, body), upstreamHash: all.subarray(0, nl).toString(), body: all.subarray(nl + 1) });
    });
    socket.write(head);
    socket.end(body);
  });
}

async function proxyWith(kind: RelayKind, audit: EgressAudit): Promise<{ proxy: EgressProxy; port: number }> {
  const proxy = await startEgressProxy({
    gateway: "127.0.0.1",
    ports: [upstreamPort],
    policyOf: () => ({ sandboxId: "s", internet: true, rules: undefined }),
    resolve4: async () => [],
    forbidden: () => undefined,
    audit,
    relay: kind,
  });
  return { proxy, port: proxy.listeners.get(upstreamPort)! };
}

const openFds = () => readdirSync("/proc/self/fd").length;

/** The next `n` audit records of sandbox "s". */
function records(audit: EgressAudit, n: number): Promise<EgressRecord[]> {
  const seen: EgressRecord[] = [];
  return new Promise((resolve) => {
    const off = audit.subscribe((r) => {
      seen.push(r);
      if (seen.length === n) {
        off();
        resolve(seen);
      }
    });
  });
}

describe("egress proxy: kernel relay", () => {
  beforeAll(async () => {
    await startUpstream();
    upstreamPort = (upstream.address() as { port: number }).port;
  });

  afterAll(async () => {
    for (const s of held) s.destroy();
    await new Promise((resolve) => upstream.close(resolve));
  });

  it("the addon is built and loads", () => {
    expect(loadRelayAddon()).toBeDefined();
  });

  it("readNow takes what a new connection has received before Node reads it, and Node's reads continue after it", async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const got = new Promise<[string | undefined, string]>((resolve) =>
        server.once("connection", (at: Socket) => {
          // In the accept callback, as the proxy does: Node has not read yet.
          const now = socketReadNow(at, 4)?.toString();
          let rest = "";
          at.on("data", (d: Buffer) => (rest += d.toString()));
          at.on("end", () => resolve([now, rest]));
        }),
      );
      // A client that connects, sends and closes while this process's event loop is blocked (execFileSync), so the
      // bytes are there when Node accepts.
      const port = (server.address() as { port: number }).port;
      execFileSync("python3", ["-c", `import socket\ns = socket.create_connection(("127.0.0.1", ${port}))\ns.sendall(b"GET / HTTP/1.1\\r\\n")\ns.close()`]);
      expect(await got).toEqual(["GET ", "/ HTTP/1.1\r\n"]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("64 MiB each way are byte-exact, half-close gets the answer, the audit has the bytes, the addon carried it", async () => {
    const audit = new EgressAudit();
    const { proxy, port } = await proxyWith("native", audit);
    let relayedAtEof = -1;
    onUpstreamEof = () => (relayedAtEof = proxy.relayed);
    try {
      const recorded = records(audit, 1);
      const r = await exchange(port, 64 * 2 ** 20, 64 * 2 ** 20);
      expect(r.upstreamHash).toBe(r.sentHash);
      expect(r.body.length).toBe(64 * 2 ** 20);
      expect(sha(r.body)).toBe(sha(pattern(64 * 2 ** 20)));
      expect(relayedAtEof).toBe(1);
      const [rec] = await recorded;
      expect(rec).toMatchObject({ sandboxId: "s", verdict: "allowed", host: "127.0.0.1", port: upstreamPort });
      expect(rec!.bytesOut).toBe(64 * 2 ** 20 + `POST /x?down=${64 * 2 ** 20} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`.length);
      expect(rec!.bytesIn).toBe(64 * 2 ** 20 + 65);
      expect(proxy.relayed).toBe(0);
    } finally {
      onUpstreamEof = () => undefined;
      await proxy.close();
    }
  });

  it("the relay kind is the proxy's setting, fixed at start: BURROW_EGRESS_RELAY set later changes nothing", async () => {
    const audit = new EgressAudit();
    const { proxy, port } = await proxyWith("native", audit);
    let relayedAtEof = -1;
    onUpstreamEof = () => (relayedAtEof = proxy.relayed);
    const before = process.env["BURROW_EGRESS_RELAY"];
    process.env["BURROW_EGRESS_RELAY"] = "js";
    try {
      const r = await exchange(port, 1024, 1024);
      expect(r.upstreamHash).toBe(r.sentHash);
      expect(relayedAtEof).toBe(1);
    } finally {
      if (before === undefined) delete process.env["BURROW_EGRESS_RELAY"];
      else process.env["BURROW_EGRESS_RELAY"] = before;
      onUpstreamEof = () => undefined;
      await proxy.close();
    }
  });

  it("100 connections at once (a quarter of them slow readers) are byte-exact and audited; the process's descriptors come back to where they were", async () => {
    const audit = new EgressAudit();
    const fdsBefore = openFds();
    const { proxy, port } = await proxyWith("native", audit);
    let maxRelayed = 0;
    onUpstreamEof = () => (maxRelayed = Math.max(maxRelayed, proxy.relayed));
    try {
      const recorded = records(audit, 100);
      const results = await Promise.all(Array.from({ length: 100 }, (_, i) => exchange(port, 256 * 1024 + i, 512 * 1024 + i, i % 4 === 0)));
      for (const [i, r] of results.entries()) {
        expect(r.upstreamHash).toBe(r.sentHash);
        expect(sha(r.body)).toBe(sha(pattern(512 * 1024 + i)));
      }
      expect(maxRelayed).toBeGreaterThan(1);
      const recs = await recorded;
      expect(recs.every((r) => r.verdict === "allowed" && r.bytesOut > 256 * 1024 && r.bytesIn > 512 * 1024)).toBe(true);
    } finally {
      onUpstreamEof = () => undefined;
      await proxy.close();
    }
    // The upstream server's sockets close on their own clock.
    for (let i = 0; i < 50 && openFds() > fdsBefore; i++) await new Promise((r) => setTimeout(r, 20));
    expect(openFds()).toBe(fdsBefore);
  });

  it("close() ends relayed connections and reports them", async () => {
    const audit = new EgressAudit();
    const { proxy, port } = await proxyWith("native", audit);
    const socket = connect({ port, host: "127.0.0.1" });
    socket.on("error", () => undefined);
    const closed = new Promise((resolve) => socket.once("close", resolve));
    socket.write("GET /hold HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    for (let i = 0; i < 100 && proxy.relayed === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(proxy.relayed).toBe(1);
    const recorded = records(audit, 1);
    await proxy.close();
    await closed;
    expect((await recorded)[0]).toMatchObject({ verdict: "allowed", bytesOut: "GET /hold HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".length, bytesIn: 0 });
  });

  it("a client that resets ends the relayed connection, though the upstream stays quiet", async () => {
    const audit = new EgressAudit();
    const { proxy, port } = await proxyWith("native", audit);
    try {
      const socket = connect({ port, host: "127.0.0.1" });
      socket.on("error", () => undefined);
      socket.write("GET /hold HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
      for (let i = 0; i < 100 && proxy.relayed === 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(proxy.relayed).toBe(1);
      const recorded = records(audit, 1);
      socket.resetAndDestroy();
      expect((await recorded)[0]).toMatchObject({ verdict: "allowed", bytesIn: 0 });
      expect(proxy.relayed).toBe(0);
    } finally {
      await proxy.close();
    }
  });

  it("a client that resets while the upstream connection is being made leaves nothing open", async () => {
    const quiet = createServer((s) => s.on("error", () => undefined).resume());
    await new Promise<void>((resolve) => quiet.listen(0, "127.0.0.1", resolve));
    const upstreamClosed = new Promise<void>((resolve) => quiet.once("connection", (s) => s.once("close", () => resolve())));
    let clientGone: () => void = () => undefined;
    const gone = new Promise<void>((resolve) => (clientGone = resolve));
    const audit = new EgressAudit();
    const proxy = await startEgressProxy({
      gateway: "127.0.0.1",
      ports: [upstreamPort],
      policyOf: () => ({ sandboxId: "s", internet: true, rules: undefined }),
      resolve4: async () => [],
      forbidden: () => undefined,
      audit,
      relay: "native",
      // Standing in for a slow user's proxy: connected only once the client has gone.
      dial: async () => {
        await gone;
        const u = connect({ port: (quiet.address() as { port: number }).port, host: "127.0.0.1" });
        await new Promise((resolve) => u.once("connect", resolve));
        return u;
      },
    });
    try {
      const recorded = records(audit, 1);
      const c = connect({ port: proxy.listeners.get(upstreamPort)!, host: "127.0.0.1" });
      c.on("error", () => undefined);
      c.write("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
      await new Promise((r) => setTimeout(r, 100));
      // A reset, not a FIN: a FIN is a half-close, which the relay carries (the upstream may still answer).
      c.resetAndDestroy();
      await new Promise((r) => setTimeout(r, 50));
      clientGone();
      await upstreamClosed;
      expect((await recorded)[0]).toMatchObject({ verdict: "allowed", bytesOut: 0, bytesIn: 0 });
    } finally {
      await proxy.close();
      await new Promise((resolve) => quiet.close(resolve));
    }
  });

  it("the JS relay (egressRelay js) passes the same exchanges, half-close included", async () => {
    const audit = new EgressAudit();
    const { proxy, port } = await proxyWith("js", audit);
    let relayedAtEof = -1;
    onUpstreamEof = () => (relayedAtEof = proxy.relayed);
    try {
      const r = await exchange(port, 8 * 2 ** 20, 8 * 2 ** 20);
      expect(r.upstreamHash).toBe(r.sentHash);
      expect(sha(r.body)).toBe(sha(pattern(8 * 2 ** 20)));
      expect(relayedAtEof).toBe(0);
      // An upstream that is done first must not cut off what Node still holds for a slow client.
      const many = await Promise.all(Array.from({ length: 20 }, (_, i) => exchange(port, 64 * 1024, 4 * 2 ** 20 + i, true)));
      for (const [i, m] of many.entries()) expect(sha(m.body), `connection ${i}`).toBe(sha(pattern(4 * 2 ** 20 + i)));
    } finally {
      onUpstreamEof = () => undefined;
      await proxy.close();
    }
  });

  it("through a user's SOCKS5 proxy, bytes that came with its handshake reach the client", async () => {
    // A SOCKS5 proxy (no auth) whose CONNECT reply carries the destination's first bytes in the same write, as when
    // a server speaks first and the segments coalesce; after the client's EOF it says "bye" and ends.
    const socks = createServer({ allowHalfOpen: true }, (s) => {
      let buf = Buffer.alloc(0);
      let stage = 0;
      s.on("error", () => undefined);
      s.on("data", (d: Buffer) => {
        buf = Buffer.concat([buf, d]);
        if (stage === 0 && buf.length >= 2 && buf.length >= 2 + buf[1]!) {
          buf = buf.subarray(2 + buf[1]!);
          stage = 1;
          s.write(Buffer.from([5, 0]));
        }
        if (stage === 1 && buf.length >= 10) {
          stage = 2;
          s.write(Buffer.concat([Buffer.from([5, 0, 0, 1, 0, 0, 0, 0, 0, 0]), Buffer.from("server speaks first\n")]));
        }
      });
      s.on("end", () => s.end("bye"));
    });
    await new Promise<void>((resolve) => socks.listen(0, "127.0.0.1", resolve));
    const upstreamProxy = parseUpstreamProxy(`socks5://127.0.0.1:${(socks.address() as { port: number }).port}`);
    const audit = new EgressAudit();
    const proxy = await startEgressProxy({
      gateway: "127.0.0.1",
      ports: [upstreamPort],
      policyOf: () => ({ sandboxId: "s", internet: true, rules: undefined }),
      resolve4: async () => [],
      forbidden: () => undefined,
      audit,
      relay: "native",
      dial: (_id, ip, port) => dialThroughUserProxy({ resolve4: async () => [], forbidden: () => undefined }, upstreamProxy, ip, port),
    });
    try {
      const answer = await new Promise<string>((resolve, reject) => {
        const c = connect({ port: proxy.listeners.get(upstreamPort)!, host: "127.0.0.1", allowHalfOpen: true });
        let got = "";
        c.on("data", (d: Buffer) => (got += d.toString()));
        c.on("error", reject);
        c.on("end", () => {
          c.end();
          resolve(got);
        });
        c.end("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
      });
      expect(answer).toBe("server speaks first\nbye");
    } finally {
      await proxy.close();
      await new Promise((resolve) => socks.close(resolve));
    }
  });
});
