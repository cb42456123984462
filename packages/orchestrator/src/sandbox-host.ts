// Brings one sandbox up on this host and takes it down again: writable layer, cgroups, network reservation,
// launcher (which plumbs the network), envd. Knows nothing of pools or the control plane; the orchestrator composes it.
import { randomBytes, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { chown, mkdir, rename, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { BurrowError, Code, ENVD_PORT } from "@burrow/protocol";
import type { OrchestratorConfig } from "./config.js";
import { statePaths } from "./config.js";
import { writeTrustedCa } from "./egress/sandbox-trust.js";
import { envdAt, waitForEnvd } from "./envd-client/index.js";
import { envdListening } from "./envd-listening.js";
import { randomId } from "./ids.js";
import { launchSandbox, swapRoot } from "./launcher/index.js";
import type { RunningSandboxTarget } from "./launcher/launcher-mode.js";
import type { Logger } from "./logger.js";
import type { ReaperPaths } from "./reaper/reaper.js";
import type { SandboxStorage } from "./storage/disk-storage.js";
import { removeTree } from "./storage/remove-tree.js";
import { writeRecord, type SandboxRecordFile } from "./sandbox-record.js";
import type { TemplateManifest } from "./templates/template-store.js";
import type { VolumeMount } from "./orchestrator-api.js";
import { attachVolumes } from "./volumes/attach-volumes.js";
import { volumeDir } from "./volumes/volume-storage.js";
import type { CgroupManager, NetworkManager, NetworkReservation, SandboxCgroup, SandboxLimits, SandboxNetwork } from "./types.js";

/** A sandbox this host runs, with handles on everything it holds. */
export interface HostedSandbox {
  record: SandboxRecordFile;
  dir: string;
  cgroup: SandboxCgroup;
  network: SandboxNetwork;
}

export interface SandboxHostDeps {
  config: Readonly<OrchestratorConfig>;
  cgroups: CgroupManager;
  network: NetworkManager;
  runtimeDir: string;
  runtimeCommand: string[];
  layerPath: (layerId: string) => string;
  /** The egress CA sandboxes trust (egress/sandbox-trust.ts), written into each writable layer at launch. */
  trustedCa?: () => string | undefined;
  /** The burrow-reaper that parents sandbox inits. */
  reaper: ReaperPaths;
  storage: SandboxStorage;
  logger: Logger;
  /** The sandboxes' gateway, where Burrow's resolver answers; without it, sandboxes get the host's name servers. */
  gateway?: string;
  /** Host services whose names go into /etc/hosts (egress/host-services.ts). */
  hostServices?: { list(): { name: string; hostsFile?: boolean }[] };
}

const SANDBOX_HOSTNAME = "sandbox";
/** Where a prepared sandbox's first root keeps its writable layer, work dir and mount point, inside its directory. */
const SHELL_DIR = "shell";
/** The template id in a prepared sandbox's record until swapRoot gives it a template. */
export const SHELL_TEMPLATE_ID = "*";
/** How long to wait for envd's "listening" log line before polling /health regardless. */
const ENVD_LISTENING_HINT_MS = 3000;

export class SandboxHost {
  /** Directories of ended sandboxes whose removal failed; retryRemovals tries them again. */
  private readonly unremoved = new Set<string>();
  private retrying: Promise<void> | undefined;

  constructor(private readonly deps: SandboxHostDeps) {}

  /** Start a sandbox of `template` and wait until its envd answers. Leaves nothing behind on failure. */
  async launch(
    template: TemplateManifest,
    limits: SandboxLimits,
    opts: {
      allowInternetAccess: boolean;
      pooled: boolean;
      signal?: AbortSignal;
      /** A directory prepared on the same filesystem (a copy of a checkpoint) that becomes the sandbox's, instead of a new empty one. */
      writableDir?: string;
      /** Volumes bound into it (kept in its record for cold boots). */
      volumes?: readonly VolumeMount[] | undefined;
      /**
       * A prepared sandbox: it runs on `template`'s layers over a writable layer of its own (`shell/` in its
       * directory) until swapRoot gives it the root of the template a create names over its real one.
       */
      shell?: boolean;
    },
  ): Promise<HostedSandbox> {
    const { config, cgroups, network } = this.deps;
    const sandboxId = randomId();
    const dir = statePaths(config.stateDir).sandbox(sandboxId);
    const upper = join(dir, "upper");
    const initToken = randomBytes(24).toString("hex");
    const log = join(dir, "envd.log");
    let cgroup: SandboxCgroup | undefined;
    let reservation: NetworkReservation | undefined;
    let quota: Promise<void> | undefined;
    let net: SandboxNetwork | undefined;
    let pid: number | undefined;
    try {
      const started = performance.now();
      // The address is leased at once; its firewall elements are installed while everything else happens.
      reservation = network.reserve(sandboxId, { allowInternetAccess: opts.allowInternetAccess, signal: opts.signal });
      net = reservation.network;
      // The writable layer and the cgroups are independent: prepare them side by side.
      const prepared = await Promise.allSettled([
        (async () => {
          if (opts.writableDir) await rename(opts.writableDir, dir);
          else await this.deps.storage.createWritableDir(dir);
          await this.prepareWritableLayer(dir, upper);
          if (opts.shell) {
            await mkdir(join(dir, SHELL_DIR, "work"), { recursive: true });
            await mkdir(join(dir, SHELL_DIR, "rootfs"));
            await mkdir(join(dir, SHELL_DIR, "upper"));
            return;
          }
          await this.writeTrustedCa(upper, template);
        })(),
        (async () => {
          cgroup = await cgroups.open(sandboxId);
          await cgroup.setLimits(limits);
        })(),
      ]);
      for (const result of prepared) if (result.status === "rejected") throw result.reason;
      const sandboxCgroup = cgroup as SandboxCgroup | undefined;
      const sandboxNet = reservation;
      if (!sandboxCgroup) throw new BurrowError(Code.Internal, "cgroup was not created", { reason: "cgroup_missing" });
      // The disk limit is applied while the sandbox starts: nothing but envd runs in it before its create returns.
      quota = this.deps.storage.applyQuota(dir, limits.diskMB);
      quota.catch(() => undefined);
      const preparedAt = performance.now();
      const bootId = randomUUID();
      const launched = await this.startInit(
        {
          dir: opts.shell ? join(dir, SHELL_DIR) : dir,
          layers: template.layers,
          cgroup: sandboxCgroup,
          initToken,
          bootId,
          plumbing: sandboxNet.plumbing,
          volumes: opts.volumes,
          log,
        },
        opts.signal,
      );
      pid = launched.pid;
      const launchedAt = performance.now();
      const record: SandboxRecordFile = {
        sandboxId,
        // A prepared sandbox has no template until swapRoot gives it one; pools and tests count it apart.
        templateId: opts.shell ? SHELL_TEMPLATE_ID : template.templateId,
        pid: launched.pid,
        pidStartTime: launched.startTime,
        usernsOwner: launched.usernsOwner,
        hostUidBase: launched.hostUidBase,
        ip: sandboxNet.network.ip,
        hostVeth: sandboxNet.network.hostVeth,
        limits,
        allowInternetAccess: opts.allowInternetAccess,
        startedAt: new Date().toISOString(),
        initToken,
        pooled: opts.pooled,
        bootId,
        ...(opts.volumes?.length ? { volumes: opts.volumes.map((v) => ({ volumeId: v.volumeId, path: v.path })) } : {}),
      };
      // The record is written while envd starts; a restart before it exists reaps the directory as a leftover.
      await Promise.all([quota, writeRecord(dir, record), this.envdReady(sandboxNet, log, opts.signal)]);
      this.deps.logger.debug(
        {
          sandboxId,
          prepareMs: Math.round(preparedAt - started),
          launchMs: Math.round(launchedAt - preparedAt),
          envdReadyMs: Math.round(performance.now() - launchedAt),
        },
        "sandbox launched",
      );
      return { record, dir, cgroup: sandboxCgroup, network: sandboxNet.network };
    } catch (error) {
      if (opts.signal?.aborted) this.deps.logger.debug({ sandboxId }, "sandbox launch canceled; cleaning up");
      else this.deps.logger.warn({ sandboxId, err: error }, "sandbox launch failed; cleaning up");
      // What runs beside the launch ends first, so that nothing is added back after the teardown removed it.
      await Promise.allSettled([reservation?.firewall, quota]);
      await this.teardown({ sandboxId, dir, cgroup, network: net, pid }).catch((cleanupError: unknown) =>
        this.deps.logger.error({ sandboxId, err: cleanupError }, "cleanup after failed launch failed"),
      );
      if (error instanceof BurrowError) throw error;
      if (opts.signal?.aborted) throw new BurrowError(Code.Canceled, "sandbox creation was canceled", { reason: "launch_canceled", cause: error });
      throw new BurrowError(Code.Internal, `sandbox could not be started: ${(error as Error).message}`, { reason: "launch_failed", cause: error });
    }
  }

  /**
   * Start a halted sandbox again (a cold boot, cold-boot.ts): on its own directory and writable layer, the layers
   * and address of its record, new cgroups and a new boot id; resolves once envd answers (not yet /init-ed). The
   * record gets the new init (pid, owner, boot id) while envd starts and keeps its state; the caller marks it
   * running. On failure whatever was started ends again and the directory, record and lease stay.
   */
  async relaunch(sandbox: HostedSandbox, layers: readonly string[], signal?: AbortSignal): Promise<void> {
    const { cgroups, network } = this.deps;
    const { record, dir } = sandbox;
    const { sandboxId } = record;
    const log = join(dir, "envd.log");
    let cgroup: SandboxCgroup | undefined;
    let reservation: NetworkReservation | undefined;
    try {
      reservation = network.reserve(sandboxId, { allowInternetAccess: record.allowInternetAccess, ip: record.ip, egress: record.egress, signal });
      cgroup = await cgroups.open(sandboxId);
      await cgroup.setLimits(record.limits);
      const bootId = randomUUID();
      const launched = await this.startInit(
        { dir, layers, cgroup, initToken: record.initToken, bootId, plumbing: reservation.plumbing, volumes: record.volumes },
        signal,
      );
      sandbox.cgroup = cgroup;
      sandbox.network = reservation.network;
      sandbox.record = {
        ...record,
        pid: launched.pid,
        pidStartTime: launched.startTime,
        usernsOwner: launched.usernsOwner,
        hostUidBase: launched.hostUidBase,
        bootId,
      };
      await Promise.all([writeRecord(dir, sandbox.record), this.envdReady(reservation, log, signal)]);
    } catch (error) {
      await Promise.allSettled([reservation?.firewall]);
      await cgroup?.killAll(AbortSignal.timeout(10_000)).catch(() => undefined);
      await reservation?.network.unplug().catch(() => undefined);
      await cgroup?.destroy().catch(() => undefined);
      if (error instanceof BurrowError) throw error;
      if (signal?.aborted) throw new BurrowError(Code.Canceled, `boot of sandbox ${sandboxId} was canceled`, { reason: "boot_canceled", cause: error });
      throw new BurrowError(Code.Internal, `sandbox ${sandboxId} could not be booted: ${(error as Error).message}`, { reason: "boot_failed", cause: error });
    }
  }

  /**
   * End every process of the sandbox and release its cgroups and veth; its directory, record and address lease
   * (with its firewall elements) stay. The cgroup handle is left pointing at removed directories (killing through
   * it again finds nobody).
   */
  async halt(sandbox: HostedSandbox, signal?: AbortSignal): Promise<void> {
    await sandbox.cgroup.killAll(signal ?? AbortSignal.timeout(10_000));
    await sandbox.network.unplug();
    await sandbox.cgroup.destroy();
  }

  /** Run the launcher for a sandbox whose directory, cgroups and address are ready. */
  private startInit(
    p: {
      dir: string;
      layers: readonly string[];
      cgroup: SandboxCgroup;
      initToken: string;
      bootId: string;
      plumbing: NetworkReservation["plumbing"];
      volumes?: readonly VolumeMount[] | undefined;
      /** @default <dir>/envd.log */
      log?: string;
    },
    signal: AbortSignal | undefined,
  ) {
    const { config } = this.deps;
    return launchSandbox(
      {
        lower: p.layers.map((layerId) => this.deps.layerPath(layerId)),
        upper: join(p.dir, "upper"),
        work: join(p.dir, "work"),
        merged: join(p.dir, "rootfs"),
        runtime: this.deps.runtimeDir,
        hostname: SANDBOX_HOSTNAME,
        uidBase: config.uidBase,
        uidCount: config.uidCount,
        usernsOwners: config.usernsOwners,
        ...(config.uidRangesBase === undefined ? {} : { uidRangesBase: config.uidRangesBase }),
        cgroups: [...p.cgroup.procsPaths],
        log: p.log ?? join(p.dir, "envd.log"),
        bootId: p.bootId,
        noNewPrivileges: config.noNewPrivileges,
        env: { ENVD_PORT: String(ENVD_PORT), BURROW_ENVD_INIT_TOKEN: p.initToken },
        command: this.deps.runtimeCommand,
        reaper: this.deps.reaper,
        network: p.plumbing,
        volumes: (p.volumes ?? []).map((v) => ({ hostDir: volumeDir(config.stateDir, v.volumeId), path: v.path })),
      },
      signal,
    );
  }

  /**
   * The first /health goes out when envd's log says it listens (polling from then on, or after a while without that
   * line), so no refused attempts compete with envd for the CPU while it starts.
   */
  private async envdReady(reservation: NetworkReservation, log: string, signal: AbortSignal | undefined): Promise<void> {
    await Promise.all([reservation.firewall, envdListening(log, { timeoutMs: ENVD_LISTENING_HINT_MS, signal })]);
    await waitForEnvd(envdAt(reservation.network.ip), { timeoutMs: this.deps.config.envdReadyTimeoutMs, signal });
  }

  /**
   * Give a prepared sandbox (launched with `shell`) the root of `template`: its layers over the sandbox's real
   * writable layer, with the CA and the files a launch writes there; what runs in it (init, envd) carries on in the
   * new root (launcher --swap-root). The shell's own writable layer is removed afterwards. Rejects when the swap
   * failed: the caller destroys the sandbox.
   */
  async swapRoot(sandbox: HostedSandbox, template: TemplateManifest, signal?: AbortSignal): Promise<void> {
    const { record, dir } = sandbox;
    const started = performance.now();
    await this.writeTrustedCa(join(dir, "upper"), template);
    const caWritten = performance.now();
    await swapRoot(
      {
        ...this.target(record),
        lower: template.layers.map((layerId) => this.deps.layerPath(layerId)),
        upper: join(dir, "upper"),
        work: join(dir, "work"),
        merged: join(dir, "rootfs"),
      },
      signal,
    );
    sandbox.record = { ...record, templateId: template.templateId };
    this.deps.logger.debug(
      { sandboxId: record.sandboxId, caMs: Math.round(caWritten - started), swapMs: Math.round(performance.now() - caWritten) },
      "sandbox root swapped",
    );
    void removeTree(join(dir, SHELL_DIR)).catch((error: unknown) =>
      this.deps.logger.warn({ sandboxId: record.sandboxId, err: error }, "could not remove a prepared sandbox's first root"),
    );
  }

  /** The running sandbox as the launcher's modes name it. */
  private target(record: SandboxRecordFile): RunningSandboxTarget {
    const { config } = this.deps;
    return {
      reaper: this.deps.reaper,
      pid: record.pid,
      pidStartTime: record.pidStartTime,
      uidBase: config.uidBase,
      uidCount: config.uidCount,
      hostUidBase: record.hostUidBase ?? config.uidBase,
    };
  }

  private async writeTrustedCa(upper: string, template: TemplateManifest): Promise<void> {
    const ca = this.deps.trustedCa?.();
    if (ca !== undefined) await writeTrustedCa(upper, ca, template.layers.map((l) => this.deps.layerPath(l)), this.deps.config.uidBase);
  }

  /**
   * Bind volumes into a running sandbox (a pooled one claimed with volumeMounts) as a launch with them would, and
   * keep them in its in-memory record (the claim writes it) for cold boots. Rejects when any mount failed: the
   * caller destroys the sandbox, whose mount namespace may hold the volumes mounted before the failure.
   */
  async attachVolumes(sandbox: HostedSandbox, volumes: readonly VolumeMount[], signal?: AbortSignal): Promise<void> {
    const { config } = this.deps;
    const { record } = sandbox;
    await attachVolumes(
      {
        ...this.target(record),
        volumes: volumes.map((v) => ({ hostDir: volumeDir(config.stateDir, v.volumeId), path: v.path })),
      },
      signal,
    );
    sandbox.record = { ...record, volumes: volumes.map((v) => ({ volumeId: v.volumeId, path: v.path })) };
  }

  /** Change the disk limit of a running sandbox (a pooled one claimed with other limits). */
  async setDiskLimit(sandbox: HostedSandbox, diskMB: number): Promise<void> {
    await this.deps.storage.applyQuota(sandbox.dir, diskMB);
  }

  /** Kill every process of the sandbox and remove its cgroups, network and writable layer. */
  async destroy(sandbox: HostedSandbox): Promise<void> {
    await this.teardown({
      sandboxId: sandbox.record.sandboxId,
      dir: sandbox.dir,
      cgroup: sandbox.cgroup,
      network: sandbox.network,
      pid: sandbox.record.pid,
    });
  }

  private async teardown(parts: {
    sandboxId: string;
    dir: string;
    cgroup?: SandboxCgroup | undefined;
    network?: SandboxNetwork | undefined;
    pid?: number | undefined;
  }): Promise<void> {
    const failures: unknown[] = [];
    // Milliseconds per step, logged at debug level: what a slow kill spends its time on (bench/kill.mjs reads them).
    const ms: Record<string, number> = {};
    const attempt = async (name: string, step: () => Promise<void>) => {
      const started = performance.now();
      try {
        await step();
      } catch (error) {
        failures.push(error);
      } finally {
        ms[name] = Math.round((performance.now() - started) * 10) / 10;
      }
    };
    if (parts.cgroup) {
      const cgroup = parts.cgroup;
      await attempt("killAll", () => cgroup.killAll(AbortSignal.timeout(10_000)));
    } else if (parts.pid) {
      const pid = parts.pid;
      await attempt("killAll", async () => void process.kill(pid, "SIGKILL"));
    }
    if (parts.network) {
      const net = parts.network;
      await attempt("networkRelease", () => net.release());
    }
    if (parts.cgroup) {
      const cgroup = parts.cgroup;
      await attempt("cgroupDestroy", () => cgroup.destroy());
    }
    // Once its processes, network and cgroups are gone the sandbox has ended, whatever its directory holds: a
    // removal that fails is logged and retried later, not reported as a failed kill.
    await attempt("removeDir", () => this.removeDir(parts.sandboxId, parts.dir));
    this.deps.logger.debug({ sandboxId: parts.sandboxId, teardownMs: ms }, "sandbox torn down");
    if (failures.length > 0) {
      throw new AggregateError(failures, `teardown of sandbox ${parts.sandboxId} was incomplete`);
    }
  }

  /**
   * Remove an ended sandbox's directory (writable layer, record, log). When that fails the directory is kept for
   * retryRemovals and the failure is logged, never thrown; a restart retries it too (adoptOrReap).
   */
  async removeDir(sandboxId: string, dir: string, signal?: AbortSignal): Promise<void> {
    try {
      await removeTree(dir, { signal });
      this.unremoved.delete(dir);
    } catch (error) {
      this.unremoved.add(dir);
      this.deps.logger.error({ sandboxId, dir, err: error }, "could not remove the directory of an ended sandbox; will retry");
    }
  }

  /** How many ended sandboxes' directories are waiting for another removal attempt. */
  get pendingRemovals(): number {
    return this.unremoved.size;
  }

  /** Try again to remove the directories whose removal failed (one pass at a time). */
  retryRemovals(signal?: AbortSignal): Promise<void> {
    this.retrying ??= (async () => {
      for (const dir of [...this.unremoved]) {
        if (signal?.aborted) break;
        await this.removeDir(basename(dir), dir, signal);
      }
    })().finally(() => (this.retrying = undefined));
    return this.retrying;
  }

  /**
   * The upper layer's root must belong to the sandbox's root (the shifted uid), since overlayfs takes the
   * merged root's owner from it. /etc/hostname and /etc/hosts are written here, not into shared layers.
   */
  private async prepareWritableLayer(dir: string, upper: string): Promise<void> {
    const { uidBase } = this.deps.config;
    const etc = join(upper, "etc");
    // Independent steps side by side: each is a round trip through libuv's thread pool.
    await Promise.all([join(dir, "work"), join(dir, "rootfs"), etc].map((path) => mkdir(path, { recursive: true })));
    const { gateway, hostServices } = this.deps;
    const services = gateway === undefined ? [] : (hostServices?.list() ?? []).filter((s) => s.hostsFile !== false).map((s) => `${gateway}\t${s.name}\n`);
    const files: [string, string][] = [
      ["hostname", `${SANDBOX_HOSTNAME}\n`],
      ["hosts", `127.0.0.1\tlocalhost\n127.0.1.1\t${SANDBOX_HOSTNAME}\n::1\tlocalhost ip6-localhost ip6-loopback\n${services.join("")}`],
      // Burrow's resolver on the gateway (egress/dns-server.ts): it enforces domain rules and knows host services.
      ["resolv.conf", gateway === undefined ? sandboxResolvConf() : `nameserver ${gateway}\noptions timeout:2 attempts:2\n`],
    ];
    await Promise.all(files.map(([name, text]) => writeFile(join(etc, name), text)));
    await Promise.all([upper, etc, ...files.map(([name]) => join(etc, name))].map((path) => chown(path, uidBase, uidBase)));
  }
}

/**
 * Name servers for sandboxes: the host's own, minus loopback ones (a sandbox's loopback is its own). They are
 * reachable only from sandboxes with internet access, like every other outside address.
 */
function sandboxResolvConf(): string {
  let hostConf = "";
  try {
    hostConf = readFileSync("/etc/resolv.conf", "utf8");
  } catch {
    // No resolver configured on the host: sandboxes get none either.
  }
  const servers = hostConf
    .split("\n")
    .map((line) => /^\s*nameserver\s+(\S+)/.exec(line)?.[1])
    .filter((server): server is string => server !== undefined && !server.startsWith("127.") && server !== "::1");
  return servers.map((server) => `nameserver ${server}\n`).join("") + "options timeout:2 attempts:2\n";
}
