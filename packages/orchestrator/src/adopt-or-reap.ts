// Recovery at start: sandboxes whose init still runs are taken back (re-adopted), filesystem-paused ones too (with
// their address and nothing else), and memory-paused ones whose processes did not survive (a host reboot, a killed
// reaper) become filesystem-paused; everything else a previous run left (dead sandboxes, pooled ones, half-created
// ones, cgroups and veths without a sandbox) is removed.
import { readdir } from "node:fs/promises";
import { statePaths } from "./config.js";
import { isSandboxInitAlive } from "./launcher/index.js";
import type { LiveSandboxes } from "./live-sandboxes.js";
import type { Logger } from "./logger.js";
import type { SandboxLifecycleEvent } from "./orchestrator-api.js";
import type { HostedSandbox, SandboxHost } from "./sandbox-host.js";
import { pauseKindOf, readRecord, writeRecord } from "./sandbox-record.js";
import type { CgroupManager, NetworkManager } from "./types.js";

export interface AdoptOrReapDeps {
  stateDir: string;
  cgroups: CgroupManager;
  network: NetworkManager;
  host: SandboxHost;
  /** Where re-adopted sandboxes go. */
  live: LiveSandboxes;
  /** Memory pauses converted because their processes were gone. */
  onLifecycleEvent: (event: SandboxLifecycleEvent) => void;
  logger: Logger;
}

export async function adoptOrReap(deps: AdoptOrReapDeps): Promise<void> {
  const { cgroups, live, logger } = deps;
  const paths = statePaths(deps.stateDir);
  // One sandbox that cannot be taken back or removed is logged and left for the next start: it never stops
  // this one, nor the others.
  for (const sandboxId of await readdir(paths.sandboxes)) {
    await adoptOrReapOne(deps, sandboxId, paths.sandbox(sandboxId)).catch((error: unknown) =>
      logger.error({ sandboxId, err: error }, "could not re-adopt or reap a sandbox left by a previous run"),
    );
  }
  for (const sandboxId of await cgroups.list()) {
    if (live.has(sandboxId)) continue;
    try {
      const cgroup = await cgroups.open(sandboxId);
      await cgroup.killAll(AbortSignal.timeout(10_000)).catch(() => undefined);
      await cgroup.destroy().catch(() => undefined);
    } catch (error) {
      logger.error({ sandboxId, err: error }, "could not remove the cgroup of a sandbox left by a previous run");
    }
  }
  await deps.network.reapOrphans(live.ids());
}

async function adoptOrReapOne(deps: AdoptOrReapDeps, sandboxId: string, dir: string): Promise<void> {
  const { logger } = deps;
  const record = await readRecord(dir);
  if (!record) {
    await reapLeftovers(deps, sandboxId, dir);
    return;
  }
  const cgroup = await deps.cgroups.open(sandboxId);
  const network = deps.network.adopt(sandboxId, record.ip, record.hostVeth, record.allowInternetAccess, record.egress);
  const sandbox: HostedSandbox = { record, dir, cgroup, network };
  const kind = pauseKindOf(record);
  const alive = !record.pooled && isSandboxInitAlive(record.pid, record.pidStartTime);
  if (!record.pooled && kind === "filesystem") {
    // Whatever runs (a boot a crash cut short) ends: the record, written before it, says halted.
    await deps.host.halt(sandbox, AbortSignal.timeout(10_000));
    deps.live.add(sandbox);
    logger.info({ sandboxId, state: "paused", pause: kind }, "re-adopted filesystem-paused sandbox");
  } else if (alive) {
    // Bring the freezer in line with the record: a restart may have come between writing it and
    // freezing (pause) or between thawing and writing it (resume).
    const state = record.state ?? "running";
    try {
      if (state === "paused") await cgroup.freeze(AbortSignal.timeout(10_000));
      else await cgroup.thaw(AbortSignal.timeout(10_000));
    } catch (error) {
      logger.error({ sandboxId, state, err: error }, "could not restore the freezer state of a re-adopted sandbox");
    }
    deps.live.add(sandbox);
    logger.info({ sandboxId, state }, `re-adopted ${state} sandbox`);
  } else if (kind === "memory" && record.boot) {
    // Its memory is gone with its processes, its files are not: what was a memory pause is a filesystem pause now.
    sandbox.record = { ...record, pause: { kind: "filesystem", since: record.pause?.since ?? record.startedAt } };
    await writeRecord(dir, sandbox.record);
    await deps.host.halt(sandbox, AbortSignal.timeout(10_000));
    deps.live.add(sandbox);
    logger.info({ sandboxId, reason: "host_restart" }, "memory pause converted to a filesystem pause: its processes were gone at start");
    deps.onLifecycleEvent({ type: "pause_converted", sandboxId, from: "memory", to: "filesystem", reason: "host_restart", at: new Date() });
  } else {
    logger.info({ sandboxId, pooled: record.pooled }, "reaping sandbox left by a previous run");
    await deps.host.destroy(sandbox).catch((error: unknown) => logger.error({ sandboxId, err: error }, "reap failed"));
  }
}

/** A sandbox directory without a record: half created, or half removed. A directory that will not go is logged. */
async function reapLeftovers(deps: AdoptOrReapDeps, sandboxId: string, dir: string): Promise<void> {
  const cgroup = await deps.cgroups.open(sandboxId);
  await cgroup.killAll(AbortSignal.timeout(10_000)).catch(() => undefined);
  await cgroup.destroy().catch(() => undefined);
  await deps.host.removeDir(sandboxId, dir);
}
