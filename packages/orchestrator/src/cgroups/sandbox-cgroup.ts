// The cgroups of one sandbox: a limits backend (v1 controllers or cgroup2), a control backend (cgroup2
// core or v1 freezer) and the list of directories its processes join.
import { BurrowError, Code } from "@burrow/protocol";
import type { CgroupSample, SandboxCgroup, SandboxLimits } from "../types.js";
import { readPids, removeTree, waitUntil } from "./cgroup-fs.js";
import { type ControlBackend, killPids } from "./control.js";
import type { LimitsBackend } from "./limits.js";

export interface SandboxCgroupTimeouts {
  /** Upper bound for freeze/thaw and for killAll when the caller passes no signal. */
  operationMs: number;
  /** How long destroy() retries while the kernel still reports the directory busy. */
  removeMs: number;
}

export class SandboxCgroupImpl implements SandboxCgroup {
  readonly sandboxId: string;
  readonly procsPaths: readonly string[];
  readonly #limits: LimitsBackend;
  readonly #control: ControlBackend;
  readonly #timeouts: SandboxCgroupTimeouts;

  constructor(init: {
    sandboxId: string;
    dirs: readonly string[];
    limits: LimitsBackend;
    control: ControlBackend;
    timeouts: SandboxCgroupTimeouts;
  }) {
    this.sandboxId = init.sandboxId;
    this.procsPaths = Object.freeze([...init.dirs]);
    this.#limits = init.limits;
    this.#control = init.control;
    this.#timeouts = init.timeouts;
  }

  setLimits(limits: SandboxLimits): Promise<void> {
    return this.#limits.setLimits(limits);
  }

  /** Members of any of the sandbox's directories (a process that joined only some still counts). */
  async pids(): Promise<number[]> {
    const all = new Set<number>();
    for (const dir of this.procsPaths) for (const pid of await readPids(dir)) all.add(pid);
    return [...all].sort((a, b) => a - b);
  }

  freeze(signal?: AbortSignal): Promise<void> {
    return this.#control.freeze(signal, this.#timeouts.operationMs);
  }

  thaw(signal?: AbortSignal): Promise<void> {
    return this.#control.thaw(signal, this.#timeouts.operationMs);
  }

  async killAll(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) throw new BurrowError(Code.Canceled, `killAll of ${this.sandboxId} aborted`, { cause: signal.reason });
    await this.#control.kill(signal, this.#timeouts.operationMs);
    // The control directory empties first (notified, not polled); the check below then usually finds nobody at once.
    await this.#control.waitEmpty?.(signal, this.#timeouts.operationMs);
    // Stragglers: processes that joined some hierarchies but not the control one. Each is signalled once,
    // while it is still listed as a member, so a recycled pid is never hit later.
    const signalled = new Set<number>();
    await waitUntil(
      async () => {
        const left = await this.pids();
        killPids(left.filter((p) => !signalled.has(p)));
        for (const p of left) signalled.add(p);
        return left.length === 0;
      },
      { signal, timeoutMs: this.#timeouts.operationMs, what: `sandbox ${this.sandboxId} to be empty` },
    );
  }

  async destroy(): Promise<void> {
    for (const dir of this.procsPaths) await removeTree(dir, this.#timeouts.removeMs);
  }

  sample(): Promise<CgroupSample> {
    return this.#limits.sample();
  }
}
