// Volumes through the official e2b SDK against a real in-process Burrow: the time to create a sandbox with one
// volume mounted beside one without, both launched fresh (pool size 0), then both from a warm pool (a pooled
// sandbox has the volume bound in by the launcher's --attach-volumes mode before the create returns; each create
// waits for a full pool first), and write+read throughput inside a sandbox on the volume beside
// its own writable layer (dd, fsync'd writes; reads of the same file, from the page cache).
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { Sandbox, Volume } from "e2b";
import { startBurrow, stopBurrow } from "./lib/burrow.mjs";
import { freeSubnet } from "./lib/host.mjs";
import { median, report, timeMs } from "./lib/stats.mjs";

const RUNS = Number(process.env.BENCH_VOLUME_RUNS ?? 10);
const MB = Number(process.env.BENCH_VOLUME_MB ?? 256);

/** MB/s from dd's summary line ("… copied, 1.2 s, 220 MB/s"), in MB/s whatever unit dd chose. */
function ddRate(output) {
  const m = /([\d.]+) ([kMG]?B)\/s/.exec(output);
  if (!m) throw new Error(`no rate in dd's output: ${output}`);
  return Number(m[1]) * { B: 1e-6, kB: 1e-3, MB: 1, GB: 1e3 }[m[2]];
}

async function throughput(sandbox, dir) {
  const file = `${dir}/bench.bin`;
  const write = await sandbox.commands.run(`dd if=/dev/zero of=${file} bs=1M count=${MB} conv=fsync 2>&1 | tail -1`, { timeoutMs: 300_000 });
  const read = await sandbox.commands.run(`dd if=${file} of=/dev/null bs=1M 2>&1 | tail -1`, { timeoutMs: 300_000 });
  await sandbox.commands.run(`rm -f ${file}`);
  return { write: ddRate(write.stdout), read: ddRate(read.stdout) };
}

export async function runVolumeBenchmarks() {
  const stateDir = mkdtempSync("/var/tmp/burrow-bench-volumes-");
  const instance = `v${randomBytes(2).toString("hex")}`;
  const burrow = await startBurrow({ stateDir, instance, subnet: freeSubnet(), pool: { template: "base", size: 0 } });
  const { opts } = burrow;
  process.env.E2B_VOLUME_API_URL = burrow.url;
  try {
    process.stdout.write("\n== volumes (official e2b SDK → Burrow) ==\n");
    process.stdout.write(`load average at start: ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}\n`);
    const volume = await Volume.create("bench", opts);
    // One of each first, so that neither figure pays for a cold page cache.
    await (await Sandbox.create("base", opts)).kill();
    await (await Sandbox.create("base", { ...opts, volumeMounts: { "/data": volume } })).kill();
    const plain = [];
    const mounted = [];
    for (let i = 0; i < RUNS; i++) {
      // Alternated, so that load on the shared machine falls on both alike.
      let sandbox;
      plain.push(await timeMs(async () => (sandbox = await Sandbox.create("base", opts))));
      await sandbox.kill();
      mounted.push(await timeMs(async () => (sandbox = await Sandbox.create("base", { ...opts, volumeMounts: { "/data": volume } }))));
      await sandbox.kill();
    }
    report("create with one volume mounted, p50", median(mounted), "ms", median(plain), "create without", "≤ 1.10×");
    await pooledCreates();

    const sandbox = await Sandbox.create("base", { ...opts, timeoutMs: 600_000, volumeMounts: { "/data": volume } });
    const layer = await throughput(sandbox, "/home/user");
    const onVolume = await throughput(sandbox, "/data");
    report(`write ${MB} MiB (fsync) on the volume`, onVolume.write, "MB/s", layer.write, "writable layer");
    report(`read ${MB} MiB on the volume`, onVolume.read, "MB/s", layer.read, "writable layer");
    await sandbox.kill();
    await Volume.destroy(volume.volumeId, opts);
  } finally {
    await stopBurrow(burrow);
    rmSync(stateDir, { recursive: true, force: true });
  }
}

/** Pooled creates with and without a volume, alternated, each from a full pool, on a server of its own. */
async function pooledCreates() {
  const stateDir = mkdtempSync("/var/tmp/burrow-bench-volumes-pool-");
  const instance = `v${randomBytes(2).toString("hex")}`;
  const burrow = await startBurrow({ stateDir, instance, subnet: freeSubnet(), pool: { template: "base", size: 2 } });
  const { opts } = burrow;
  const poolFull = async () => {
    for (;;) {
      const text = await (await fetch(`${burrow.url}/metrics`)).text();
      const value = (state) => Number(new RegExp(`^burrow_pool_sandboxes\\{[^}]*kind="warm"[^}]*state="${state}"[^}]*\\} (\\d+)`, "m").exec(text)?.[1] ?? -1);
      if (value("target") > 0 && value("ready") === value("target")) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  try {
    const volume = await Volume.create("bench-pool", opts);
    const plain = [];
    const mounted = [];
    let pooled = 0;
    for (let i = 0; i <= RUNS; i++) {
      let sandbox;
      await poolFull();
      const p = await timeMs(async () => (sandbox = await Sandbox.create("base", opts)));
      await sandbox.kill();
      await poolFull();
      const m = await timeMs(async () => (sandbox = await Sandbox.create("base", { ...opts, volumeMounts: { "/data": volume } })));
      await sandbox.kill();
      // The first of each warms the page cache and is left out.
      if (i > 0) plain.push(p), mounted.push(m);
    }
    const claims = await (await fetch(`${burrow.url}/metrics`)).text();
    pooled = Number(/^burrow_sandbox_claim_duration_seconds_count\{source="pool"\} (\d+)/m.exec(claims)?.[1] ?? 0);
    process.stdout.write(`pooled creates: ${pooled} of ${2 * (RUNS + 1)}\n`);
    report("pooled create with one volume mounted, p50", median(mounted), "ms", median(plain), "pooled create without", "≤ 2×");
    await Volume.destroy(volume.volumeId, opts);
  } finally {
    await stopBurrow(burrow);
    rmSync(stateDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await runVolumeBenchmarks();
