// Egress of a sandbox whose rules name a domain, beside a sandbox whose rules are IP-only (pure nftables: the
// baseline), in the same run, to the same fake host in a network namespace on this machine
// (test/helpers/fake-internet.mjs; nothing leaves the machine). The domain-rule sandbox's connections take one of
// two paths: to an address Burrow's resolver gave it for the allowed name, the direct path (the kernel forwards the
// connection once the egress judge has read its Host or SNI from the queued first packets: what a client that
// resolves the name gets); to any other address, the transparent egress proxy (DNAT'ed to it: it reads the name,
// resolves it and splices, with its kernel relay). Both are measured: "judged" with a sandbox that resolves the
// name through Burrow's resolver, "proxy" with one that never asks (it connects to the address, naming the host).
// Latency: sequential GETs, each on a new connection, timed inside the sandbox (python3's clock, so the SDK's round
// trips do not count), over HTTP and over HTTPS (the fake host's certificate, from the fake internet's CA; not
// intercepted), in rounds with the cases alternating. Throughput: 100 MB downloads with curl, the cases alternating
// round by round, median of 11. Targets (issue 10): ≤ 1.2× the baseline's latency, ≥ 80% of its throughput.
// A fourth figure for the download: a plain Node pipe relay in a process of its own, which sandboxes reach as a host
// service (relay.burrow:8080), DNAT'ed to the gateway like the proxy, and which connects to the same fake host:
// "plain Node pipe speed", for scale.
import { spawn } from "node:child_process";
import { rmSync, mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { randomBytes } from "node:crypto";
import { Sandbox } from "e2b";
import { DNS_ADDRESS, startFakeInternet } from "../test/helpers/fake-internet.mjs";
import { startBurrow, stopBurrow } from "./lib/burrow.mjs";
import { freeSubnet } from "./lib/host.mjs";
import { median, report } from "./lib/stats.mjs";

const HOST = "203.0.113.10";
const NAME = "bench.test";
const REQUESTS = Number(process.env.BENCH_EGRESS_REQUESTS ?? 200);
/** Latency is taken in this many rounds, the cases alternating, so that the machine's load falls on all alike. */
const ROUNDS = 8;
const BYTES = 100 * 2 ** 20;
/** A 100 MB download takes ~30 ms here: a median of many, or the machine's noise decides the ratio. */
const DOWNLOADS = Number(process.env.BENCH_EGRESS_DOWNLOADS ?? 11);

// Per-request milliseconds of `count` GETs of `scheme`://`name`/, each on a new connection to the address
// `connect` resolves to (once, before the clock runs; an address resolves to itself without a lookup), after 3
// untimed; prints them.
const LATENCY = `import http.client, socket, ssl, sys, time
scheme, name, connect, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
address = socket.gethostbyname(connect)
ctx = ssl.create_default_context(cafile="/tmp/ca.pem") if scheme == "https" else None
times = []
for i in range(count + 3):
    t = time.perf_counter()
    s = socket.create_connection((address, 443 if ctx else 80), timeout=10)
    c = http.client.HTTPSConnection(name, context=ctx) if ctx else http.client.HTTPConnection(name)
    c.sock = ctx.wrap_socket(s, server_hostname=name) if ctx else s
    c.request("GET", "/")
    body = c.getresponse().read()
    c.close()
    if i >= 3: times.append((time.perf_counter() - t) * 1000)
    assert body.startswith(b"hello from"), body
print(" ".join(str(t) for t in times))
`;

/** p50 and p95 of each [sandbox, scheme, connect]'s requests, REQUESTS each in ROUNDS alternating rounds. */
async function latencies(cases) {
  const times = cases.map(() => []);
  for (let r = 0; r < ROUNDS; r++) {
    for (const [j, [sandbox, scheme, connect]] of cases.entries()) {
      const count = Math.ceil(REQUESTS / ROUNDS);
      const out = await sandbox.commands.run(`python3 /tmp/latency.py ${scheme} ${NAME} ${connect} ${count}`, { timeoutMs: 300_000 });
      times[j].push(...out.stdout.trim().split(" ").map(Number));
    }
  }
  return times.map((t) => {
    t.sort((a, b) => a - b);
    return { p50: t[t.length >> 1], p95: t[Math.floor(t.length * 0.95)] };
  });
}

/** MiB/s of one download. */
async function download(sandbox, url) {
  const out = await sandbox.commands.run(`curl -s -o /dev/null -w '%{size_download} %{speed_download}' ${url}`, { timeoutMs: 300_000 });
  const [size, speed] = out.stdout.trim().split(" ").map(Number);
  if (size !== BYTES) throw new Error(`downloaded ${size} bytes, not ${BYTES}`);
  return speed / 2 ** 20;
}

/**
 * Median MiB/s of each [sandbox, url], taken in alternating rounds so that the machine's load falls on all alike.
 */
async function throughputs(cases) {
  const speeds = cases.map(() => []);
  for (let i = 0; i < DOWNLOADS; i++) {
    for (const [j, [sandbox, url]] of cases.entries()) speeds[j].push(await download(sandbox, url));
  }
  return speeds.map((s) => median(s));
}

// The plain relay: every connection piped to the fake host's port 80, 1 MiB socket buffers like the proxy's.
const RELAY = `const net=require("net");const HWM=2**20;
const s=net.createServer({highWaterMark:HWM},(c)=>{const u=net.connect({host:process.argv[1],port:80,readableHighWaterMark:HWM,writableHighWaterMark:HWM});
u.once("connect",()=>{c.pipe(u);u.pipe(c)});u.on("error",()=>c.destroy());c.on("error",()=>u.destroy())});
s.listen(Number(process.argv[2]),"0.0.0.0",()=>console.log("ready"));`;

async function freePort() {
  const s = createServer();
  await new Promise((resolve) => s.listen(0, "127.0.0.1", resolve));
  const { port } = s.address();
  await new Promise((resolve) => s.close(resolve));
  return port;
}

export async function runEgressBenchmarks() {
  process.stdout.write("\n== egress: domain rules (judged direct path, egress proxy) vs IP rules ==\n");
  const internet = await startFakeInternet([HOST], { names: { [NAME]: HOST }, ttl: 60 });
  const stateDir = mkdtempSync("/var/tmp/burrow-bench-egress-");
  let burrow;
  const relayPort = await freePort();
  const relay = spawn(process.execPath, ["-e", RELAY, HOST, String(relayPort)], { stdio: ["ignore", "pipe", "inherit"] });
  try {
    await new Promise((resolve, reject) => {
      relay.once("exit", (code) => reject(new Error(`the relay exited (${code})`)));
      relay.stdout.once("data", resolve);
    });
    burrow = await startBurrow({
      stateDir,
      instance: `g${randomBytes(2).toString("hex")}`,
      subnet: freeSubnet(),
      pool: { size: 0 },
      config: { dnsUpstream: DNS_ADDRESS, hostServices: [{ name: "relay.burrow", hostPort: relayPort, port: 8080 }] },
    });
    const create = (network) => Sandbox.create("base", { ...burrow.opts, timeoutMs: 600_000, network });
    const direct = await create({ allowOut: [HOST], denyOut: ["0.0.0.0/0"] });
    const judged = await create({ allowOut: [NAME], denyOut: ["0.0.0.0/0"] });
    const proxied = await create({ allowOut: [NAME], denyOut: ["0.0.0.0/0"] });
    try {
      for (const s of [direct, judged, proxied]) {
        await s.files.write("/tmp/latency.py", LATENCY);
        await s.files.write("/tmp/ca.pem", internet.caCert);
      }
      internet.assertRouted();
      for (const scheme of ["http", "https"]) {
        const [d, j, p] = await latencies([
          [direct, scheme, HOST],
          [judged, scheme, NAME],
          [proxied, scheme, HOST],
        ]);
        const what = scheme.toUpperCase();
        report(`${what} request latency p50, domain rule, judged direct path`, j.p50, "ms", d.p50, "IP rule", "≤ 1.2×");
        report(`${what} request latency p95, domain rule, judged direct path`, j.p95, "ms", d.p95, "IP rule");
        report(`${what} request latency p50, domain rule, via egress proxy`, p.p50, "ms", d.p50, "IP rule");
        report(`${what} request latency p95, domain rule, via egress proxy`, p.p95, "ms", d.p95, "IP rule");
      }
      const [dt, jt, pt, rt] = await throughputs([
        // Both by name, so that both pay the lookup through Burrow's resolver that curl makes first.
        [direct, `http://${NAME}/bytes/${BYTES}`],
        [judged, `http://${NAME}/bytes/${BYTES}`],
        [proxied, `--resolve ${NAME}:80:${HOST} http://${NAME}/bytes/${BYTES}`],
        [direct, `http://relay.burrow:8080/bytes/${BYTES}`],
      ]);
      report("100 MB download, domain rule, judged direct path", jt, "MiB/s", dt, "IP rule", "≥ 0.8×");
      report("100 MB download, domain rule, via egress proxy", pt, "MiB/s", dt, "IP rule");
      report("100 MB download, via a plain Node pipe relay", rt, "MiB/s", dt, "IP rule");
      const judgedRecords = await egressVias(burrow, judged);
      const proxiedRecords = await egressVias(burrow, proxied);
      process.stdout.write(`  audit of the judged sandbox: ${judgedRecords}; of the proxied one: ${proxiedRecords}\n`);
    } finally {
      await Promise.all([direct.kill(), judged.kill(), proxied.kill()].map((p) => p.catch(() => undefined)));
    }
  } finally {
    if (burrow) await stopBurrow(burrow);
    relay.kill("SIGTERM");
    await internet.close();
    rmSync(stateDir, { recursive: true, force: true });
  }
}

/** How the sandbox's audited connections went (`via` counts), to show which path the figures took. */
async function egressVias(burrow, sandbox) {
  const res = await fetch(`${burrow.opts.apiUrl}/burrow/v1/sandboxes/${sandbox.sandboxId}/egress?limit=1000`, { headers: { "x-api-key": burrow.opts.apiKey } });
  const { events } = await res.json();
  const counts = {};
  for (const e of events) counts[`${e.via} ${e.verdict}`] = (counts[`${e.via} ${e.verdict}`] ?? 0) + 1;
  return JSON.stringify(counts);
}

if (import.meta.url === `file://${process.argv[1]}`) await runEgressBenchmarks();
