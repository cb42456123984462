// Admission of new sandboxes against the host: the host-wide floor under any per-team quota. A sandbox too large
// for the host is a bad request (400); too many live sandboxes or too much memory promised to them is a limit
// reached (429); a host short of memory or disk is 507. Every refusal names the limit and the current usage.
import { BurrowError, Code } from "@burrow/protocol";
import type { AdmissionConfig } from "../config.js";
import type { HostCapacity } from "./host-capacity.js";

/** Why a request was refused, as counted in burrow_admission_refusals_total. */
export type RefusalReason =
  | "sandbox_size"
  | "sandboxes"
  | "memory_commit"
  | "host_memory"
  | "host_disk"
  | "builds"
  | "snapshot_storage"
  | "snapshot_count";

export interface NewSandboxes {
  /** Sandboxes the request adds (create: 1, fork: its count). */
  count: number;
  /** Limits of each, when known before they start (a template's defaults). */
  memoryMB?: number | undefined;
  cpuCount?: number | undefined;
}

/** Holds admitted sandboxes' place until they are recorded (or failed); release exactly once. */
export interface AdmissionTicket {
  release(): void;
}

export interface SandboxAdmissionDeps {
  config: AdmissionConfig;
  host: HostCapacity;
  /** Live (running and paused) sandboxes recorded now and the sum of their memory limits. */
  totals: () => { sandboxes: number; memoryMB: number };
  onRefused?: (reason: RefusalReason) => void;
}

export class SandboxAdmission {
  readonly #d: SandboxAdmissionDeps;
  /** Admitted but not yet recorded: creates and forks under way. */
  #pendingSandboxes = 0;
  #pendingMemoryMB = 0;

  constructor(deps: SandboxAdmissionDeps) {
    this.#d = deps;
  }

  /** Refuse limits no sandbox on this host can have, whatever else runs. */
  checkSize(limits: { memoryMB?: number | undefined; cpuCount?: number | undefined }): void {
    const { host } = this.#d;
    if (limits.memoryMB !== undefined) {
      const { totalMB } = host.memory();
      if (limits.memoryMB > totalMB) {
        this.#refuse("sandbox_size", Code.InvalidArgument, `memoryMB ${limits.memoryMB} is more than this host's memory (${totalMB} MiB)`);
      }
    }
    if (limits.cpuCount !== undefined) {
      const cpus = host.cpus();
      if (limits.cpuCount > cpus) {
        this.#refuse("sandbox_size", Code.InvalidArgument, `cpuCount ${limits.cpuCount} is more than this host's CPUs (${cpus})`);
      }
    }
  }

  /** Admit new sandboxes (create, fork). Their place is held until the ticket is released. */
  async admitNew(request: NewSandboxes, signal?: AbortSignal): Promise<AdmissionTicket> {
    this.checkSize(request);
    await this.#checkHost(signal);
    // Synchronous from here on: the counts read and the place taken cannot interleave with another admission.
    const { config, host } = this.#d;
    const totals = this.#d.totals();
    const live = totals.sandboxes + this.#pendingSandboxes;
    if (live + request.count > config.maxSandboxes) {
      const asked = request.count > 1 ? ` + ${request.count} requested` : "";
      this.#refuse(
        "sandboxes",
        Code.ResourceExhausted,
        `live sandboxes: ${live} running or paused${asked}, the limit is ${config.maxSandboxes}; kill a sandbox first`,
      );
    }
    const memoryMB = (request.memoryMB ?? 0) * request.count;
    const committed = totals.memoryMB + this.#pendingMemoryMB;
    const { totalMB } = host.memory();
    const allowed = Math.floor(config.memoryOvercommit * totalMB);
    if (memoryMB > 0 && committed + memoryMB > allowed) {
      this.#refuse(
        "memory_commit",
        Code.ResourceExhausted,
        `sandbox memory: ${committed} MiB promised to live sandboxes + ${memoryMB} MiB requested exceeds ` +
          `${allowed} MiB (${config.memoryOvercommit} × ${totalMB} MiB of host memory)`,
      );
    }
    this.#pendingSandboxes += request.count;
    this.#pendingMemoryMB += memoryMB;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.#pendingSandboxes -= request.count;
        this.#pendingMemoryMB -= memoryMB;
      },
    };
  }

  /** A paused sandbox resuming is counted already; only a host short of memory or disk refuses it. */
  async admitResume(signal?: AbortSignal): Promise<void> {
    await this.#checkHost(signal);
  }

  /** 507 when the host is short of memory or disk. */
  async #checkHost(signal?: AbortSignal): Promise<void> {
    const { config, host } = this.#d;
    if (config.minAvailableMemoryMB > 0) {
      const { availableMB } = host.memory();
      if (availableMB < config.minAvailableMemoryMB) {
        this.#refuse(
          "host_memory",
          Code.ResourceExhausted,
          `host memory: ${availableMB} MiB available, ${config.minAvailableMemoryMB} MiB floor`,
        );
      }
    }
    if (config.minFreeDiskMB > 0) {
      const disk = await host.disk(signal);
      if (disk && disk.freeMB < config.minFreeDiskMB) {
        this.#refuse("host_disk", Code.ResourceExhausted, `host disk: ${disk.freeMB} MiB free in ${disk.path}, ${config.minFreeDiskMB} MiB floor`);
      }
    }
  }

  /** The reason is the refusal's metric label and the error's reason (host_memory and host_disk answer 507). */
  #refuse(reason: RefusalReason, code: Code, message: string): never {
    this.#d.onRefused?.(reason);
    throw new BurrowError(code, message, { reason });
  }
}
