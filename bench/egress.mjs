// Egress through the transparent egress proxy (a sandbox whose rules name a domain: its TCP 80 and 443 are DNAT'ed to
// the proxy, which reads the Host or SNI, resolves the name and splices bytes) beside a direct connection of a sandbox
// whose rules are IP-only (pure nftables), in the same run, to the same fake host in a network namespace on this
// machine (test/helpers/fake-internet.mjs; nothing leaves the machine). Latency: sequential GETs, each on a new
// connection, timed inside the sandbox (python3's clock, so the SDK's round trips do not count), over HTTP and over
// HTTPS (the fake host's certificate, from the fake internet's CA; not intercepted: the proxy reads the SNI and
// splices), in rounds with the cases alternating. The proxied client resolves the name once through its resolver
// (Burrow's), as a client does, then connects to that address per request; the direct one connects to the address.
// Throughput: 100 MB downloads with curl, the cases alternating round by round, median of 5. Targets (issue 10):
// ≤ 1.2× the direct latency, ≥ 80% of the direct throughput.
// A third figure for the download: a plain Node pipe relay in a process of its own, which sandboxes reach as a host
// service (relay.burrow:8080; port 80 is the model gateway's), DNAT'ed to the gateway like the proxy, and which
// connects to the same fake host: the egress proxy's path with nothing of Burrow's in the relay, i.e. "plain Node
// pipe speed".
// The proxy twice: with its kernel relay (splice(2) on the addon's thread, the default) and with the JS relay it falls
// back to (the orchestrator's egressRelay "js", fixed when its proxy starts): a second Burrow in this process, on a
// subnet of its own, whose proxied sandbox takes its turn in the same rounds.
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
const DOWNLOADS = Number(process.env.BENCH_EGRESS_DOWNLOADS ?? 5);

// Per-request milliseconds of `count` GETs of `scheme`://`name`/, each on a new connection to the address
// `connect` resolves to (once, before the clock runs), after 3 untimed; prints them.
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

/**
 * p50 and p95 of each [sandbox, scheme, connect]'s requests, REQUESTS each in ROUNDS alternating rounds. The
 * proxied sandbox resolves the name (Burrow's resolver) and connects to that address: each request pays the proxy
 * (its accept, the name read and judged, its own cached lookup, a second connection), not a lookup.
 */
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
  process.stdout.write("\n== egress proxy ==\n");
  const internet = await startFakeInternet([HOST], { names: { [NAME]: HOST }, ttl: 60 });
  const stateDir = mkdtempSync("/var/tmp/burrow-bench-egress-");
  const stateDirJs = mkdtempSync("/var/tmp/burrow-bench-egress-js-");
  let burrow;
  let burrowJs;
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
    burrowJs = await startBurrow({
      stateDir: stateDirJs,
      instance: `g${randomBytes(2).toString("hex")}`,
      subnet: freeSubnet(),
      pool: { size: 0 },
      config: { dnsUpstream: DNS_ADDRESS, egressRelay: "js" },
    });
    const create = (b, network) => Sandbox.create("base", { ...b.opts, timeoutMs: 600_000, network });
    const direct = await create(burrow, { allowOut: [HOST], denyOut: ["0.0.0.0/0"] });
    const proxied = await create(burrow, { allowOut: [NAME], denyOut: ["0.0.0.0/0"] });
    const proxiedJs = await create(burrowJs, { allowOut: [NAME], denyOut: ["0.0.0.0/0"] });
    try {
      for (const s of [direct, proxied, proxiedJs]) {
        await s.files.write("/tmp/latency.py", LATENCY);
        await s.files.write("/tmp/ca.pem", internet.caCert);
      }
      internet.assertRouted();
      for (const scheme of ["http", "https"]) {
        const [d, p, pj] = await latencies([
          [direct, scheme, HOST],
          [proxied, scheme, NAME],
          [proxiedJs, scheme, NAME],
        ]);
        const what = scheme.toUpperCase();
        report(`${what} request latency p50, via egress proxy`, p.p50, "ms", d.p50, "direct", "≤ 1.2×");
        report(`${what} request latency p95, via egress proxy`, p.p95, "ms", d.p95, "direct");
        report(`${what} request latency p50, via egress proxy, JS relay`, pj.p50, "ms", d.p50, "direct");
        report(`${what} request latency p95, via egress proxy, JS relay`, pj.p95, "ms", d.p95, "direct");
      }
      const [dt, pt, pjt, rt] = await throughputs([
        [direct, `http://${HOST}/bytes/${BYTES}`],
        [proxied, `http://${NAME}/bytes/${BYTES}`],
        [proxiedJs, `http://${NAME}/bytes/${BYTES}`],
        [direct, `http://relay.burrow:8080/bytes/${BYTES}`],
      ]);
      report("100 MB download, via egress proxy", pt, "MiB/s", dt, "direct", "≥ 0.8×");
      report("100 MB download, via egress proxy, JS relay", pjt, "MiB/s", dt, "direct");
      report("100 MB download, via a plain Node pipe relay", rt, "MiB/s", dt, "direct");
      report("100 MB download, via egress proxy vs its JS relay", pt, "MiB/s", pjt, "JS relay");
    } finally {
      await Promise.all([direct.kill(), proxied.kill(), proxiedJs.kill()].map((p) => p.catch(() => undefined)));
    }
  } finally {
    if (burrowJs) await stopBurrow(burrowJs);
    if (burrow) await stopBurrow(burrow);
    relay.kill("SIGTERM");
    await internet.close();
    rmSync(stateDir, { recursive: true, force: true });
    rmSync(stateDirJs, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await runEgressBenchmarks();
