// The egress judge (egress/egress-judge.ts, native/relay/judge.c) on a real forwarding path: three network namespaces
// the test makes (client → router → server, veths, 10.250.x.0/24), the router with the direct path's rules (an nft
// table marking the packets of unjudged connections to the server, iptables-nft's NFQUEUE rule, conntrack marks from
// the verdict marks, a reset for the client's packets of a denied connection, a short TIME_WAIT, and the FIN/RST of allowed connections logged to the judge's NFLOG group)
// and the judge in a process entered into the router's namespace (fixtures/egress-judge-process.mjs). The server
// namespace runs Node HTTP (:80) and TLS (:443) servers; each request is a Node process in the client namespace.
// Every case fails without the judge: the queue then has no reader and its packets are dropped (fail closed).
import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { JUDGE_MARKS, startEgressJudge, type JudgeEvent } from "../src/egress/egress-judge.js";
import { POLL } from "./helpers/poll.js";

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
const tag = `ej${process.pid % 100000}`;
const ns = { client: `${tag}-c`, router: `${tag}-r`, server: `${tag}-s` };
const net = 100 + 2 * (process.pid % 60); // 10.250.<net>.0/24 client side, <net+1> server side
const clientIp = `10.250.${net}.2`;
const serverIp = `10.250.${net + 1}.2`;
const queue = 20000 + (process.pid % 10000);

const run = (cmd: string, ...args: string[]) => execFileSync(cmd, args, { stdio: ["ignore", "pipe", "pipe"] }).toString();
const inNs = (name: string, cmd: string, ...args: string[]) => run("ip", "netns", "exec", name, cmd, ...args);

/** A child speaking JSON lines (stdout), collected in `lines`. */
class Peer {
  readonly lines: Record<string, unknown>[] = [];
  readonly child: ChildProcessWithoutNullStreams;
  constructor(namespace: string, script: string, ...args: string[]) {
    this.child = spawn("ip", ["netns", "exec", namespace, process.execPath, script, ...args], { stdio: "pipe" });
    this.child.stderr.on("data", (d: Buffer) => process.stderr.write(d));
    createInterface({ input: this.child.stdout }).on("line", (line) => this.lines.push(JSON.parse(line) as Record<string, unknown>));
  }
  send(obj: object): void {
    this.child.stdin.write(`${JSON.stringify(obj)}\n`);
  }
  async first(pred: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
    return vi.waitFor(() => {
      const line = this.lines.find(pred);
      if (!line) throw new Error("not yet");
      return line;
    }, POLL);
  }
  stop(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGKILL");
  }
}

let judge: Peer;
let servers: Peer;
let certDir: string;
/** What the test answers to an ASK for a name. */
const answers = new Map<string, boolean>();

const events = () => judge.lines.filter((l) => l.type === "event").map((l) => l.event as JudgeEvent);
const eventFor = (pred: (e: JudgeEvent) => boolean) =>
  vi.waitFor(() => {
    const e = events().find(pred);
    if (!e) throw new Error("no such event yet");
    return e;
  }, POLL);

interface RequestSpec {
  port: number;
  head: string[];
  gapMs?: number;
  tls?: { servername?: string };
}
interface RequestResult {
  ok: boolean;
  response?: string;
  error?: string;
}

/** One request from the client namespace (a Node process of its own); resolves with how it went. */
function request(spec: RequestSpec): Promise<RequestResult> {
  return new Promise((resolve, reject) => {
    const child = spawn("ip", ["netns", "exec", ns.client, process.execPath, fixture("egress-judge-client.mjs"), JSON.stringify({ ip: serverIp, ...spec })]);
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.on("error", reject);
    child.on("close", () => {
      try {
        resolve(JSON.parse(out) as RequestResult);
      } catch {
        reject(new Error(`client printed ${JSON.stringify(out)}`));
      }
    });
  });
}

const get = (host: string, ...extra: string[]) => [`GET /x HTTP/1.1\r\nHost: ${host}\r\n${extra.join("")}\r\n`];

/** The first connection the server saw close that matches. */
const serverClosed = (pred: (l: Record<string, unknown>) => boolean) => servers.first((l) => l.type === "closed" && pred(l));

function setUpNetwork(): void {
  for (const name of Object.values(ns)) run("ip", "netns", "add", name);
  run("ip", "link", "add", `${tag}c`, "netns", ns.client, "type", "veth", "peer", "name", `${tag}rc`, "netns", ns.router);
  run("ip", "link", "add", `${tag}s`, "netns", ns.server, "type", "veth", "peer", "name", `${tag}rs`, "netns", ns.router);
  const up = (name: string, dev: string, addr: string, gw: string) => {
    inNs(name, "ip", "addr", "add", addr, "dev", dev);
    inNs(name, "ip", "link", "set", dev, "up");
    inNs(name, "ip", "link", "set", "lo", "up");
    if (gw) inNs(name, "ip", "route", "add", "default", "via", gw);
  };
  up(ns.client, `${tag}c`, `${clientIp}/24`, `10.250.${net}.1`);
  up(ns.server, `${tag}s`, `${serverIp}/24`, `10.250.${net + 1}.1`);
  up(ns.router, `${tag}rc`, `10.250.${net}.1/24`, "");
  up(ns.router, `${tag}rs`, `10.250.${net + 1}.1/24`, "");
  inNs(ns.router, "sysctl", "-qw", "net.ipv4.ip_forward=1");
  const hex = (n: number) => `0x${n.toString(16)}`;
  const m = JUDGE_MARKS;
  const rules = `
table ip judge {
  ct timeout short { protocol tcp; l3proto ip; policy = { time_wait: 1, close: 10 }; }
  chain toqueue { type filter hook forward priority -200;
    iifname "${tag}rc" ct mark & 0x70000000 == ${hex(m.ctDirect)} meta mark set meta mark | ${hex(m.queue)}; }
  chain verdicts { type filter hook forward priority 0;
    ct mark & ${hex(m.ctDirect | m.ctAllowed)} == ${hex(m.ctDirect | m.ctAllowed)} tcp flags & (fin | rst) != 0 log group ${queue}
    iifname "${tag}rc" ip daddr ${serverIp} tcp flags & (syn | ack) == syn ct mark set ct mark | ${hex(m.ctDirect)} ct timeout set "short"
    meta mark & ${hex(m.allow)} == ${hex(m.allow)} ct mark set ct mark | ${hex(m.ctAllowed)}
    meta mark & ${hex(m.deny)} == ${hex(m.deny)} ct mark set ct mark | ${hex(m.ctDenied)} accept
    iifname "${tag}rc" ct mark & ${hex(m.ctDenied)} == ${hex(m.ctDenied)} reject with tcp reset; }
}`;
  execFileSync("ip", ["netns", "exec", ns.router, "nft", "-f", "-"], { input: rules });
  // conntrack counts bytes only with accounting on (per namespace): ENDED carries them.
  inNs(ns.router, "sysctl", "-qw", "net.netfilter.nf_conntrack_acct=1");
  // No --queue-bypass: without a reader the packets are dropped (fail closed).
  inNs(ns.router, "iptables-nft", "-t", "mangle", "-A", "FORWARD", "-i", `${tag}rc`, "-m", "mark", "--mark", `${hex(m.queue)}/${hex(m.queue)}`, "-j", "NFQUEUE", "--queue-num", String(queue));
}

beforeAll(async () => {
  certDir = mkdtempSync(join(tmpdir(), "burrow-judge-"));
  run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", "/CN=allowed.test",
    "-keyout", join(certDir, "key.pem"), "-out", join(certDir, "cert.pem"));
  setUpNetwork();
  servers = new Peer(ns.server, fixture("egress-judge-servers.mjs"), certDir);
  await servers.first((l) => l.type === "ready");
  judge = new Peer(ns.router, fixture("egress-judge-process.mjs"), String(queue));
  await judge.first((l) => l.type === "ready" || l.type === "error");
  expect(judge.lines[0]).toEqual({ type: "ready" });
  // Answer each ASK for a name the case set an answer for (the lines are parsed before this listener runs).
  const answered = new Set<number>();
  judge.child.stdout.on("data", () => {
    for (const e of events()) {
      const answer = e.kind === "ask" && e.name !== undefined ? answers.get(e.name) : undefined;
      if (answer === undefined || answered.has(e.flow)) continue;
      answered.add(e.flow);
      judge.send({ op: "decide", flow: e.flow, allow: answer });
    }
  });
  judge.send({ op: "allow", sandboxIp: clientIp, ip: serverIp, name: "allowed.test", ttlMs: 600_000 });
}, 60_000);

afterAll(() => {
  judge?.send({ op: "close" });
  judge?.stop();
  servers?.stop();
  for (const name of Object.values(ns)) {
    try {
      run("ip", "netns", "del", name);
    } catch {
      // not made (setup failed before it)
    }
  }
  if (certDir) rmSync(certDir, { recursive: true, force: true });
});

describe("egress judge", () => {
  /** The first case's connection, whose end the last case waits for. */
  let first: JudgeEvent | undefined;

  it("lets a connection whose Host is in the table through", async () => {
    const res = await request({ port: 80, head: get("allowed.test") });
    expect(res).toMatchObject({ ok: true });
    expect(res.response).toMatch(/^HTTP\/1\.1 200 [\s\S]*allowed\.test \/x$/);
    const allowed = await eventFor((e) => e.kind === "allowed" && e.name === "allowed.test" && e.destination.port === 80);
    expect(allowed).toMatchObject({ source: { ip: clientIp }, destination: { ip: serverIp, port: 80 } });
    first = allowed;
  });

  it("asks about a name not in the table, and an allow lets the connection through", async () => {
    answers.set("asked-yes.test", true);
    const res = await request({ port: 80, head: get("asked-yes.test") });
    expect(res.response).toMatch(/asked-yes\.test \/x$/);
    const ask = await eventFor((e) => e.kind === "ask" && e.name === "asked-yes.test");
    expect(ask.flow).toBeGreaterThan(0);
    await eventFor((e) => e.kind === "allowed" && e.flow === ask.flow);
  });

  it("resets both ends of a connection JS denies: the client's request fails, the server sees no request", async () => {
    answers.set("asked-no.test", false);
    const res = await request({ port: 80, head: get("asked-no.test") });
    expect(res).toEqual({ ok: false, error: "ECONNRESET" });
    const ask = await eventFor((e) => e.kind === "ask" && e.name === "asked-no.test");
    const denied = await eventFor((e) => e.kind === "denied" && e.flow === ask.flow);
    expect(denied.reason).toBe("not allowed");
    expect(servers.lines.some((l) => l.type === "request" && l.host === "asked-no.test")).toBe(false);
    // The reset reached the server's end: that connection closed without a request, with an error.
    const closed = await serverClosed((l) => l.port === 80 && l.requests === 0 && l.error === "ECONNRESET");
    expect(closed.bytesRead).toBe(0);
  });

  it("reads a Host that arrives in two writes 300 ms apart", async () => {
    const res = await request({ port: 80, head: ["GET /split HTTP/1.1\r\nHo", "st: allowed.test\r\n\r\n"], gapMs: 300 });
    expect(res.response).toMatch(/allowed\.test \/split$/);
  });

  it("reads the server name of a TLS ClientHello: one in the table is let through", async () => {
    const res = await request({ port: 443, tls: { servername: "allowed.test" }, head: get("allowed.test") });
    expect(res.response).toMatch(/allowed\.test \/x$/);
    await eventFor((e) => e.kind === "allowed" && e.name === "allowed.test" && e.destination.port === 443);
  });

  it("denies a TLS connection whose server name JS refuses", async () => {
    answers.set("tls-no.test", false);
    const res = await request({ port: 443, tls: { servername: "tls-no.test" }, head: get("tls-no.test") });
    expect(res).toEqual({ ok: false, error: "ECONNRESET" });
    const denied = await eventFor((e) => e.kind === "denied" && e.name === "tls-no.test");
    expect(denied.destination.port).toBe(443);
  });

  it("denies a TLS ClientHello without a server name", async () => {
    const res = await request({ port: 443, tls: {}, head: get("allowed.test") });
    expect(res).toEqual({ ok: false, error: "ECONNRESET" });
    const denied = await eventFor((e) => e.kind === "denied" && e.reason === "no server name (SNI)");
    expect(denied.destination.port).toBe(443);
  });

  it("denies a connection JS does not answer about within 5 s", async () => {
    const res = await request({ port: 80, head: get("unanswered.test") });
    expect(res).toEqual({ ok: false, error: "ECONNRESET" });
    const ask = await eventFor((e) => e.kind === "ask" && e.name === "unanswered.test");
    const denied = await eventFor((e) => e.kind === "denied" && e.flow === ask.flow);
    expect(denied.reason).toBe("no verdict in time");
    // Answering late changes nothing: the judge no longer waits for it.
    judge.send({ op: "decide", flow: ask.flow, allow: true });
    expect(await judge.first((l) => l.type === "decided" && l.flow === ask.flow)).toMatchObject({ ok: false });
  });

  it("denies a request with two Host headers without asking", async () => {
    const res = await request({ port: 80, head: get("allowed.test", "Host: other.test\r\n") });
    expect(res).toEqual({ ok: false, error: "ECONNRESET" });
    const denied = await eventFor((e) => e.kind === "denied" && e.reason === "more than one Host header");
    expect(denied.source.ip).toBe(clientIp);
    expect(events().some((e) => e.kind === "ask" && e.flow === denied.flow)).toBe(false);
  });

  it("judges 150 connections at once, each by its own name", async () => {
    // A third in the table, a third allowed when asked, a third refused when asked, HTTP and TLS mixed.
    const specs = Array.from({ length: 150 }, (_, i) => {
      const name = i % 3 === 0 ? "allowed.test" : `many-${i}.test`;
      if (i % 3 !== 0) answers.set(name, i % 3 === 1);
      return i % 2 === 0 ? { ip: serverIp, port: 80, head: [`GET /many/${i} HTTP/1.1\r\nHost: ${name}\r\n\r\n`] } : { ip: serverIp, port: 443, tls: { servername: name }, head: [`GET /many/${i} HTTP/1.1\r\nHost: ${name}\r\n\r\n`] };
    });
    const results = await new Promise<RequestResult[]>((resolve, reject) => {
      const child = spawn("ip", ["netns", "exec", ns.client, process.execPath, fixture("egress-judge-client.mjs"), JSON.stringify(specs)]);
      let out = "";
      child.stdout.on("data", (d: Buffer) => (out += d.toString()));
      child.on("error", reject);
      child.on("close", () => resolve(JSON.parse(out) as RequestResult[]));
    });
    results.forEach((res, i) => {
      const name = i % 3 === 0 ? "allowed.test" : `many-${i}.test`;
      if (i % 3 === 2) expect(res, `request ${i}`).toEqual({ ok: false, error: "ECONNRESET" });
      else expect(res.response, `request ${i}`).toMatch(new RegExp(`${name.replace(/\./g, "\\.")} /many/${i}$`));
    });
  });

  it("holds nothing once every connection is judged", async () => {
    judge.send({ op: "holding" });
    const line = await judge.first((l) => l.type === "holding");
    expect(line.holding).toBe(0);
  });

  // Near the end, as it may take long: conntrack reports an entry's end when its garbage collector finds it expired (TIME_WAIT
  // is 1 s here), and the collector's interval follows the average timeout of every entry on the host, up to 60 s.
  it("reports the end of an allowed connection with conntrack's byte counts", { timeout: 90_000 }, async () => {
    expect(first).toBeDefined();
    const ended = await vi.waitFor(() => {
      const e = events().find((x) => x.kind === "ended" && x.source.port === first!.source.port);
      if (!e) throw new Error("no end yet");
      return e;
    }, { timeout: 80_000, interval: 100 });
    expect(ended).toMatchObject({ source: { ip: clientIp }, destination: { ip: serverIp, port: 80 } });
    // The request and the answer with their IP and TCP headers: more than the payloads alone.
    expect(ended.bytesOut).toBeGreaterThan(39);
    expect(ended.bytesIn).toBeGreaterThan(100);
  });

  it("refuses a queue another socket holds", async () => {
    // In this process's own namespace (no rules send there): the second reader of a queue is refused.
    const first = await startEgressJudge({ queue, onEvent: () => undefined });
    try {
      await expect(startEgressJudge({ queue, onEvent: () => undefined })).rejects.toMatchObject({ code: "E16", message: expect.stringContaining(`NFQUEUE ${queue}`) });
    } finally {
      first.close();
    }
    // And another process's reader of the router's queue.
    const second = new Peer(ns.router, fixture("egress-judge-process.mjs"), String(queue));
    try {
      expect(await second.first((l) => l.type === "error" || l.type === "ready")).toMatchObject({ type: "error", code: "E16" });
    } finally {
      second.stop();
    }
  });
});
