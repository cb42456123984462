// Admission: the host-wide floor (sandbox sizes against the host, live sandboxes, memory promised, the host's
// free memory and disk), paused sandboxes expiring, snapshot quota refusals as E2B answers, and template builds
// at once. The server runs for real with a stub orchestrator; the host is the real one unless a test needs a host
// of a given shape, which it then describes as a HostCapacity.
import { freemem } from "node:os";
import { afterEach, describe, expect, it } from "vitest";
import { SNAPSHOT_REFUSALS, type SandboxRecord, type SnapshotInfo, type SnapshotSandboxOptions } from "@burrow/orchestrator";
import { BurrowError, Code } from "@burrow/protocol";
import type { SandboxLifecycleEvent } from "../src/index.js";
import { BuildAdmission } from "../src/admission/build-admission.js";
import type { HostCapacity } from "../src/admission/host-capacity.js";
import { SandboxAdmission, type RefusalReason } from "../src/admission/sandbox-admission.js";
import { DEFAULT_ADMISSION, resolveServerConfig, type AdmissionConfig } from "../src/config.js";
import { toE2bError } from "../src/errors.js";
import { StubOrchestrator } from "./helpers/stub-orchestrator.js";
import { startTestServer, type TestServer } from "./helpers/test-server.js";

/** The stub with pause/resume (the freezer is the real orchestrator's business) and snapshots that can be refused. */
class PausingStub extends StubOrchestrator {
  snapshotCalls: SnapshotSandboxOptions[] = [];
  refuseSnapshots: { quota: "storage" | "count"; message: string } | undefined;

  async pauseSandbox(sandboxId: string): Promise<SandboxRecord | undefined> {
    return this.#setState(sandboxId, "paused");
  }

  async resumeSandbox(sandboxId: string): Promise<SandboxRecord | undefined> {
    return this.#setState(sandboxId, "running");
  }

  async snapshotSandbox(sandboxId: string, opts: SnapshotSandboxOptions = {}): Promise<SnapshotInfo | undefined> {
    this.snapshotCalls.push(opts);
    if (this.refuseSnapshots) {
      // As the orchestrator's snapshot charges refuse.
      throw new BurrowError(Code.ResourceExhausted, this.refuseSnapshots.message, { reason: SNAPSHOT_REFUSALS[this.refuseSnapshots.quota] });
    }
    if (!this.sandboxes.has(sandboxId)) return undefined;
    return { snapshotId: `snap-${this.snapshotCalls.length}`, names: [], sandboxId, createdAt: new Date() };
  }

  /** Forks are refused by admission in these tests before the orchestrator is asked. */
  async forkSandbox(): Promise<undefined> {
    throw new Error("fork should have been refused by admission");
  }

  #setState(sandboxId: string, state: "running" | "paused"): SandboxRecord | undefined {
    const sandbox = this.sandboxes.get(sandboxId);
    if (!sandbox) return undefined;
    sandbox.record = { ...sandbox.record, state };
    return sandbox.record;
  }
}

const toClose: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of toClose.splice(0).reverse()) await close();
});

async function server(admission: Partial<AdmissionConfig>): Promise<TestServer & { stub: PausingStub }> {
  const stub = new PausingStub();
  const t = await startTestServer({ config: { admission }, deps: { orchestrator: stub } });
  toClose.push(async () => {
    await t.close();
    await stub.close();
  });
  return Object.assign(t, { stub });
}

const json = { "content-type": "application/json" };

function create(t: TestServer): Promise<Response> {
  return t.api("/v2/sandboxes", { method: "POST", headers: json, body: JSON.stringify({ templateID: "base" }) });
}

async function created(t: TestServer): Promise<string> {
  const res = await create(t);
  expect(res.status).toBe(201);
  return ((await res.json()) as { sandboxID: string }).sandboxID;
}

function waitFor(predicate: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const tick = () => {
      if (predicate()) resolve();
      else if (Date.now() > deadline) reject(new Error("condition not met in time"));
      else setTimeout(tick, 20);
    };
    tick();
  });
}

/** A host of a given shape, for the admission rules on their own. */
function host(shape: { totalMB?: number; availableMB?: number; cpus?: number; freeDiskMB?: number }): HostCapacity {
  return {
    memory: () => ({ totalMB: shape.totalMB ?? 24_000, availableMB: shape.availableMB ?? 20_000 }),
    cpus: () => shape.cpus ?? 2,
    disk: async () => ({ path: "/var/lib/burrow", freeMB: shape.freeDiskMB ?? 80_000 }),
  };
}

function admission(
  config: Partial<AdmissionConfig>,
  shape: Parameters<typeof host>[0] = {},
  totals = { sandboxes: 0, memoryMB: 0 },
): { admission: SandboxAdmission; refusals: RefusalReason[] } {
  const refusals: RefusalReason[] = [];
  return {
    admission: new SandboxAdmission({
      config: { ...DEFAULT_ADMISSION, ...config },
      host: host(shape),
      totals: () => totals,
      onRefused: (reason) => refusals.push(reason),
    }),
    refusals,
  };
}

/** The E2B answer a refused admission gives. */
async function refusal(promise: Promise<unknown>): Promise<{ status: number; message: string }> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof BurrowError)) throw new Error(`expected a BurrowError, got ${String(err)}`);
  const { status, body } = toE2bError(err);
  return { status, message: body.message };
}

describe("admission config", () => {
  it("has defaults that admit a thousand idle 512 MB sandboxes on a 24 GB host", () => {
    const cfg = resolveServerConfig({}, {});
    expect(cfg.admission).toEqual(DEFAULT_ADMISSION);
    expect(cfg.admission.maxSandboxes).toBeGreaterThanOrEqual(1000);
    expect(1000 * 512).toBeLessThanOrEqual(cfg.admission.memoryOvercommit * 24_000);
    // Paused sandboxes stay until killed unless the operator sets a maximum.
    expect(cfg.admission.maxPausedSec).toBe(0);
    expect(cfg.admission.snapshotQuotaMB).toBe(20_480);
    expect(cfg.admission.maxSnapshotsPerSandbox).toBe(32);
  });

  it("reads the documented env vars; explicit options win; a resolved config resolves to itself", () => {
    const env = {
      BURROW_MAX_SANDBOXES: "3",
      BURROW_MEMORY_OVERCOMMIT: "1.5",
      BURROW_MIN_AVAILABLE_MEMORY_MB: "0",
      BURROW_MIN_FREE_DISK_MB: "100",
      BURROW_MAX_CONCURRENT_BUILDS: "1",
      BURROW_MAX_PAUSED_SEC: "60",
      BURROW_SNAPSHOT_QUOTA_MB: "200",
      BURROW_MAX_SNAPSHOTS_PER_SANDBOX: "2",
    };
    const cfg = resolveServerConfig({}, env);
    expect(cfg.admission).toEqual({
      maxSandboxes: 3,
      memoryOvercommit: 1.5,
      minAvailableMemoryMB: 0,
      minFreeDiskMB: 100,
      maxConcurrentBuilds: 1,
      maxPausedSec: 60,
      snapshotQuotaMB: 200,
      maxSnapshotsPerSandbox: 2,
    });
    expect(resolveServerConfig({ admission: { maxSandboxes: 7 } }, env).admission.maxSandboxes).toBe(7);
    expect(resolveServerConfig(cfg, {})).toEqual(cfg);
  });

  it("rejects nonsense", () => {
    expect(() => resolveServerConfig({}, { BURROW_MAX_SANDBOXES: "lots" })).toThrow("BURROW_MAX_SANDBOXES must be a positive integer, got 'lots'");
    expect(() => resolveServerConfig({ admission: { maxSandboxes: 0 } }, {})).toThrow(/maxSandboxes/);
    expect(() => resolveServerConfig({ admission: { memoryOvercommit: 0 } }, {})).toThrow(/memoryOvercommit/);
    expect(() => resolveServerConfig({ admission: { snapshotQuotaMB: -1 } }, {})).toThrow(/snapshotQuotaMB/);
  });
});

describe("admission rules", () => {
  it("refuses a sandbox larger than the host with 400 naming the limit", async () => {
    const { admission: a, refusals } = admission({}, { totalMB: 24_000, cpus: 2 });
    expect(await refusal(a.admitNew({ count: 1, memoryMB: 262_144 }))).toEqual({
      status: 400,
      message: "memoryMB 262144 is more than this host's memory (24000 MiB)",
    });
    expect(await refusal(a.admitNew({ count: 1, cpuCount: 64 }))).toEqual({
      status: 400,
      message: "cpuCount 64 is more than this host's CPUs (2)",
    });
    (await a.admitNew({ count: 1, memoryMB: 512, cpuCount: 2 })).release();
    expect(refusals).toEqual(["sandbox_size", "sandbox_size"]);
  });

  it("counts sandboxes being created against the live limit until their ticket is released", async () => {
    const { admission: a } = admission({ maxSandboxes: 3 }, {}, { sandboxes: 1, memoryMB: 512 });
    const first = await a.admitNew({ count: 1 });
    const second = await a.admitNew({ count: 1 });
    expect(await refusal(a.admitNew({ count: 1 }))).toEqual({
      status: 429,
      message: "live sandboxes: 3 running or paused, the limit is 3; kill a sandbox first",
    });
    first.release();
    first.release();
    expect(await refusal(a.admitNew({ count: 2 }))).toMatchObject({ status: 429, message: expect.stringContaining("2 running or paused + 2 requested") });
    second.release();
    (await a.admitNew({ count: 2 })).release();
  });

  it("refuses memory promised beyond the overcommit ratio with 429", async () => {
    const { admission: a, refusals } = admission({ memoryOvercommit: 2 }, { totalMB: 1000 }, { sandboxes: 3, memoryMB: 1536 });
    (await a.admitNew({ count: 1, memoryMB: 464 })).release();
    expect(await refusal(a.admitNew({ count: 1, memoryMB: 512 }))).toEqual({
      status: 429,
      message: "sandbox memory: 1536 MiB promised to live sandboxes + 512 MiB requested exceeds 2000 MiB (2 × 1000 MiB of host memory)",
    });
    expect(refusals).toEqual(["memory_commit"]);
  });

  it("answers 507 when the host is short of memory or disk, for new and resumed sandboxes alike", async () => {
    const short = admission({ minAvailableMemoryMB: 512 }, { availableMB: 212 });
    expect(await refusal(short.admission.admitNew({ count: 1 }))).toEqual({ status: 507, message: "host memory: 212 MiB available, 512 MiB floor" });
    expect(await refusal(short.admission.admitResume())).toEqual({ status: 507, message: "host memory: 212 MiB available, 512 MiB floor" });
    const full = admission({ minFreeDiskMB: 2048 }, { freeDiskMB: 800 });
    expect(await refusal(full.admission.admitNew({ count: 1 }))).toEqual({
      status: 507,
      message: "host disk: 800 MiB free in /var/lib/burrow, 2048 MiB floor",
    });
    expect([...short.refusals, ...full.refusals]).toEqual(["host_memory", "host_memory", "host_disk"]);
    // 0 turns the floors off.
    (await admission({ minAvailableMemoryMB: 0, minFreeDiskMB: 0 }, { availableMB: 1, freeDiskMB: 1 }).admission.admitNew({ count: 1 })).release();
  });

  it("caps template builds running at once and forgets builds that ended", () => {
    const statuses = new Map<string, string>([
      ["b1", "building"],
      ["b2", "building"],
    ]);
    const refused: RefusalReason[] = [];
    const builds = new BuildAdmission(
      {
        status: (_templateId, buildId) => {
          const status = statuses.get(buildId);
          if (!status) throw new Error("not found");
          return { status };
        },
      },
      { maxConcurrentBuilds: 2, checkSize: () => undefined, refused: (r) => refused.push(r) },
    );
    builds.admit();
    builds.started("t", "b1");
    builds.admit();
    builds.started("t", "b2");
    expect(() => builds.admit()).toThrow("template builds: 2 running, the limit is 2; start this one when another has finished");
    expect(refused).toEqual(["builds"]);
    statuses.set("b1", "ready");
    builds.admit();
    statuses.delete("b2");
    builds.started("t", "b3");
    statuses.set("b3", "building");
    builds.admit();
  });
});

describe("admission through the API", () => {
  it("refuses creates beyond the live-sandbox limit with 429; paused sandboxes count; a kill frees a place", async () => {
    const t = await server({ maxSandboxes: 2 });
    const first = await created(t);
    await created(t);
    const refused = await create(t);
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({ code: 429, message: "live sandboxes: 2 running or paused, the limit is 2; kill a sandbox first" });
    expect((await t.api(`/sandboxes/${first}/pause`, { method: "POST", headers: json, body: "{}" })).status).toBe(204);
    expect((await create(t)).status).toBe(429);
    expect((await t.api(`/sandboxes/${first}`, { method: "DELETE" })).status).toBe(204);
    await created(t);
    expect(await t.server.registry.metrics()).toMatch(/burrow_admission_refusals_total\{reason="sandboxes"\} 2/);
  });

  it("refuses with 507 while the real host's MemAvailable is below the floor, and resumes alike", async () => {
    // A floor no host reaches: far above this machine's memory.
    const t = await server({ minAvailableMemoryMB: 1 << 30 });
    const res = await create(t);
    expect(res.status).toBe(507);
    const body = (await res.json()) as { code: number; message: string };
    expect(body.code).toBe(507);
    expect(body.message).toMatch(new RegExp(`^host memory: \\d+ MiB available, ${1 << 30} MiB floor$`));
    const available = Number(/(\d+) MiB available/.exec(body.message)![1]);
    // MemAvailable counts reclaimable cache that freemem() leaves out.
    expect(available).toBeGreaterThanOrEqual(Math.floor(freemem() / 2 ** 20) * 0.5);
    expect(t.stub.sandboxes.size).toBe(0);
  });

  it("refuses fork counts beyond the live-sandbox limit as a whole", async () => {
    const t = await server({ maxSandboxes: 3 });
    const source = await created(t);
    const res = await t.api(`/sandboxes/${source}/fork`, { method: "POST", headers: json, body: JSON.stringify({ count: 3 }) });
    expect(res.status).toBe(429);
    expect(((await res.json()) as { message: string }).message).toBe(
      "live sandboxes: 1 running or paused + 3 requested, the limit is 3; kill a sandbox first",
    );
  });

  it("kills a sandbox paused longer than the maximum like a timed-out one, also after a restart", async () => {
    const t = await server({ maxPausedSec: 1 });
    const events: SandboxLifecycleEvent[] = [];
    t.server.events.subscribe((e) => events.push(e));
    const id = await created(t);
    expect((await t.api(`/sandboxes/${id}/pause`, { method: "POST", headers: json, body: "{}" })).status).toBe(204);
    await waitFor(() => !t.stub.sandboxes.has(id));
    expect((await t.api(`/sandboxes/${id}`)).status).toBe(404);
    expect(events.map((e) => e.type)).toEqual(["created", "paused", "timed_out"]);
    expect(events.at(-1)).toMatchObject({ reason: "timeout" });

    // The pause time is stored: a restarted server still ends it on time.
    const again = await created(t);
    expect((await t.api(`/sandboxes/${again}/pause`, { method: "POST", headers: json, body: "{}" })).status).toBe(204);
    await t.restart();
    await waitFor(() => !t.stub.sandboxes.has(again));
    expect((await t.api(`/sandboxes/${again}`)).status).toBe(404);
  });

  it("a resumed sandbox lives by its timeout again, not by the paused maximum", async () => {
    const t = await server({ maxPausedSec: 1 });
    const id = await created(t);
    expect((await t.api(`/sandboxes/${id}/pause`, { method: "POST", headers: json, body: "{}" })).status).toBe(204);
    const resumed = await t.api(`/sandboxes/${id}/connect`, { method: "POST", headers: json, body: JSON.stringify({ timeout: 600 }) });
    expect(resumed.status).toBe(201);
    await new Promise((r) => setTimeout(r, 1500));
    expect(t.stub.sandboxes.has(id)).toBe(true);
    expect(((await (await t.api(`/sandboxes/${id}`)).json()) as { state: string }).state).toBe("running");
  });

  it("charges snapshots to the sandbox's key and answers the orchestrator's quota refusals with 507 and 429", async () => {
    const t = await server({ snapshotQuotaMB: 100, maxSnapshotsPerSandbox: 4 });
    const id = await created(t);
    const ok = await t.api(`/sandboxes/${id}/snapshots`, { method: "POST", headers: json, body: "{}" });
    expect(ok.status).toBe(201);
    expect(t.stub.snapshotCalls[0]?.quota).toEqual({ owner: expect.stringMatching(/^key:\d+$/), maxBytes: 100 * 2 ** 20, maxPerSandbox: 4 });

    const storage = "snapshot storage quota of key:1: 90 MiB used + 20 MiB for this snapshot exceeds the 100 MiB limit; delete snapshots to free space";
    t.stub.refuseSnapshots = { quota: "storage", message: storage };
    const full = await t.api(`/sandboxes/${id}/snapshots`, { method: "POST", headers: json, body: "{}" });
    expect(full.status).toBe(507);
    expect(await full.json()).toEqual({ code: 507, message: storage });

    t.stub.refuseSnapshots = { quota: "count", message: "snapshots per sandbox: sandbox x has 4 snapshots, the limit is 4; delete one to take another" };
    const many = await t.api(`/sandboxes/${id}/snapshots`, { method: "POST", headers: json, body: "{}" });
    expect(many.status).toBe(429);
    const metrics = await t.server.registry.metrics();
    expect(metrics).toMatch(/burrow_admission_refusals_total\{reason="snapshot_storage"\} 1/);
    expect(metrics).toMatch(/burrow_admission_refusals_total\{reason="snapshot_count"\} 1/);
    expect(metrics).toMatch(/burrow_snapshot_storage_limit_bytes 104857600/);
  });
});
