// Sandboxes that move between hosts (a cluster's nodes). Only a filesystem-paused sandbox moves: it holds nothing but
// its files and what a cold boot needs (cold-boot.ts), so its writable layer plus its boot spec are the whole of it.
// The sending host reads them (exportMovable); the receiving host makes the same sandbox id halted on its own disk,
// network and cgroups (importMoved), exactly as a start re-adopts a filesystem-paused sandbox (adopt-or-reap.ts), so
// that the ordinary resume cold-boots it with the same envd token and env vars.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readdir, realpath, rename } from "node:fs/promises";
import { dirname, join } from "node:path";
import { BurrowError, Code } from "@burrow/protocol";
import { statePaths, type OrchestratorConfig } from "./config.js";
import type { LiveSandboxes } from "./live-sandboxes.js";
import type { Logger } from "./logger.js";
import type { ImportSandboxOptions, MovableSandbox } from "./orchestrator-api.js";
import type { HostedSandbox, SandboxHost } from "./sandbox-host.js";
import { pauseKindOf, writeRecord, type SandboxRecordFile } from "./sandbox-record.js";
import type { SandboxStorage } from "./storage/disk-storage.js";
import { removeTree } from "./storage/remove-tree.js";
import type { CgroupManager, NetworkManager, NetworkReservation, SandboxCgroup } from "./types.js";

/** Where imports fill a sandbox's directory before it is renamed into place: beside the sandboxes, same filesystem. */
async function transfersDir(stateDir: string): Promise<string> {
  return join(dirname(await realpath(statePaths(stateDir).sandboxes)), "sandbox-transfers");
}

/** What imports cut short by a crash left (nothing imports before the orchestrator has started). */
export async function removeStaleTransfers(stateDir: string, logger: Logger): Promise<void> {
  const dir = await transfersDir(stateDir);
  if (!existsSync(dir)) return;
  for (const name of await readdir(dir)) {
    await removeTree(join(dir, name)).catch((err: unknown) => logger.error({ path: join(dir, name), err }, "could not remove what an interrupted sandbox import left"));
  }
}

/** A filesystem-paused sandbox as another host needs it; undefined when it is not (or no longer) halted here. */
export function exportMovable(live: LiveSandboxes, sandboxId: string): MovableSandbox | undefined {
  const sandbox = live.get(sandboxId);
  if (!sandbox || pauseKindOf(sandbox.record) !== "filesystem" || !sandbox.record.boot) return undefined;
  const { record } = sandbox;
  if (record.volumes?.length) return undefined;
  return {
    sandboxId,
    templateId: record.templateId,
    upperDir: join(sandbox.dir, "upper"),
    boot: structuredClone(record.boot!),
    limits: { ...record.limits },
    allowInternetAccess: record.allowInternetAccess,
    ...(record.egress ? { egress: structuredClone(record.egress) } : {}),
    startedAt: record.startedAt,
    ...(record.bootId ? { bootId: record.bootId } : {}),
  };
}

export interface ImportDeps {
  config: Readonly<OrchestratorConfig>;
  cgroups: CgroupManager;
  network: NetworkManager;
  host: SandboxHost;
  storage: SandboxStorage;
  live: LiveSandboxes;
  layerExists: (layerId: string) => boolean;
  logger: Logger;
}

/**
 * Make `opts.sandboxId` a filesystem-paused sandbox of this host: a writable directory of its own (a subvolume with
 * the disk limit on btrfs) whose upper layer `opts.fillUpper` writes, an address lease with the sandbox's firewall
 * elements, and the record a cold boot reads. Leaves nothing behind on failure.
 */
export async function importMoved(deps: ImportDeps, opts: ImportSandboxOptions): Promise<HostedSandbox> {
  const { config, storage, live, network, cgroups, host } = deps;
  const { sandboxId, signal } = opts;
  if (live.has(sandboxId)) throw new BurrowError(Code.AlreadyExists, `sandbox ${sandboxId} is already on this host`, { reason: "sandbox_exists" });
  const missing = opts.boot.layers.filter((layerId) => !deps.layerExists(layerId));
  if (missing.length > 0) {
    throw new BurrowError(Code.FailedPrecondition, `sandbox ${sandboxId} needs layers this host does not have: ${missing.join(", ")}`, { reason: "layer_missing" });
  }
  const dir = statePaths(config.stateDir).sandbox(sandboxId);
  if (existsSync(dir)) throw new BurrowError(Code.AlreadyExists, `sandbox ${sandboxId} already has a directory on this host`, { reason: "sandbox_exists" });
  // Beside the sandboxes' directories, on the same filesystem: the filled directory is renamed into place, so a
  // start never finds a half-written sandbox (one without its record is reaped as a leftover).
  const transfers = await transfersDir(config.stateDir);
  await mkdir(transfers, { recursive: true });
  const staging = join(transfers, `${sandboxId}-${randomBytes(4).toString("hex")}`);
  let reservation: NetworkReservation | undefined;
  let cgroup: SandboxCgroup | undefined;
  let placed = false;
  try {
    await storage.createWritableDir(staging);
    await Promise.all(["upper", "work", "rootfs"].map((name) => mkdir(join(staging, name), { recursive: true })));
    await opts.fillUpper(join(staging, "upper"), signal);
    reservation = network.reserve(sandboxId, { allowInternetAccess: opts.allowInternetAccess, egress: opts.egress, signal });
    await reservation.firewall;
    cgroup = await cgroups.open(sandboxId);
    const now = new Date().toISOString();
    const record: SandboxRecordFile = {
      sandboxId,
      templateId: opts.templateId,
      // Halted: no init yet. A cold boot writes its pid, owner and boot id.
      pid: 0,
      pidStartTime: "",
      ip: reservation.network.ip,
      hostVeth: reservation.network.hostVeth,
      limits: { ...opts.limits },
      allowInternetAccess: opts.allowInternetAccess,
      ...(opts.egress ? { egress: opts.egress } : {}),
      startedAt: opts.startedAt ?? now,
      initToken: randomBytes(24).toString("hex"),
      pooled: false,
      state: "paused",
      pause: { kind: "filesystem", since: now },
      boot: structuredClone(opts.boot),
    };
    await writeRecord(staging, record);
    await rename(staging, dir);
    placed = true;
    await storage.applyQuota(dir, opts.limits.diskMB);
    const sandbox: HostedSandbox = { record, dir, cgroup, network: reservation.network };
    // What a halted sandbox holds: its directory, record and address lease; no veth, no cgroups.
    await host.halt(sandbox, signal);
    live.add(sandbox);
    deps.logger.info({ sandboxId, templateId: opts.templateId }, "moved sandbox imported (filesystem-paused)");
    return sandbox;
  } catch (error) {
    await cgroup?.destroy().catch(() => undefined);
    await reservation?.network.release().catch(() => undefined);
    await removeTree(placed ? dir : staging).catch((err: unknown) => deps.logger.error({ sandboxId, err }, "could not remove a moved sandbox's directory after its import failed"));
    if (error instanceof BurrowError) throw error;
    throw new BurrowError(signal?.aborted ? Code.Canceled : Code.Internal, `sandbox ${sandboxId} could not be imported: ${(error as Error).message}`, {
      reason: "import_failed",
      cause: error,
    });
  }
}
