// Places every sandbox at <this process's cgroup>/burrow-<instance>/<sandboxId> in each hierarchy it
// uses, so sandbox accounting nests under the orchestrator's own cgroup and several instances can share
// a host. Nothing is kept in memory that the directories do not also say: list() re-discovers sandboxes
// after a restart.
import { join } from "node:path";
import { BurrowError, Code } from "@burrow/protocol";
import type { CgroupManager, SandboxCgroup } from "../types.js";
import { childDirs, ensureDir, exists, removeTree, writeText } from "./cgroup-fs.js";
import { type ControlBackend, V1FreezerControl, V2Control } from "./control.js";
import { type CgroupLayout, type CgroupLayoutKind, detectLayout, type V1Controller } from "./layout.js";
import { type LimitsBackend, V1Limits, V2Limits } from "./limits.js";
import { SandboxCgroupImpl, type SandboxCgroupTimeouts } from "./sandbox-cgroup.js";

/** Anything with `info` and `warn` taking a message (console, pino). */
export interface CgroupLogger {
  info(message: string): void;
  warn(message: string): void;
}

export interface CgroupManagerOptions {
  /** Instance name; the parent cgroup is `burrow-<instance>`. */
  instance: string;
  logger?: CgroupLogger;
  /** Bound for freeze, thaw and killAll (when no signal is given). @default 10000 */
  operationTimeoutMs?: number;
  /** How long destroy() retries a directory the kernel still reports busy. @default 2000 */
  removeTimeoutMs?: number;
}

export interface BurrowCgroupManager extends CgroupManager {
  /** Detected layout: "v2", "hybrid" (v1 controllers + cgroup2 core) or "v1". */
  readonly layout: CgroupLayoutKind;
  /** How freeze/kill work here: the cgroup2 core or the v1 freezer. */
  readonly control: "cgroup2" | "v1-freezer";
}

const INSTANCE_PATTERN = /^[a-z0-9][a-z0-9_-]{0,31}$/;
/** Sandbox ids become directory names: no separators, no dot-dot, nothing cgroupfs reserves. */
const SANDBOX_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
/** v1 limits use these; pids and cpu are optional (a warning is logged when missing). */
const V1_LIMIT_CONTROLLERS: readonly V1Controller[] = ["memory", "cpu", "cpuacct", "pids"];
const V2_CONTROLLERS = ["memory", "cpu", "pids"];

export async function createCgroupManager(options: CgroupManagerOptions): Promise<BurrowCgroupManager> {
  if (!INSTANCE_PATTERN.test(options.instance)) {
    throw new BurrowError(Code.InvalidArgument, `instance '${options.instance}' must match ${INSTANCE_PATTERN}`);
  }
  const layout = await detectLayout();
  const parentName = `burrow-${options.instance}`;
  const timeouts = { operationMs: options.operationTimeoutMs ?? 10_000, removeMs: options.removeTimeoutMs ?? 2_000 };

  // Instance parents, one per hierarchy in use (deduplicated: co-mounted controllers share a dir).
  const v1Parents = new Map<V1Controller, string>();
  for (const c of V1_LIMIT_CONTROLLERS) {
    const dir = layout.v1.get(c);
    if (dir !== undefined) v1Parents.set(c, join(dir, parentName));
    else if (layout.kind !== "v2") options.logger?.warn(`cgroup v1 controller '${c}' is not mounted; its limits are skipped`);
  }
  let v2Parent = layout.v2 === undefined ? undefined : join(layout.v2, parentName);
  if (layout.kind === "v2" && v2Parent !== undefined) {
    await delegateControllers(layout, v2Parent);
  } else if (v2Parent !== undefined) {
    await ensureDir(v2Parent);
    // Hybrid only helps if this kernel's cgroup2 has the core freezer (5.2+); else use the v1 freezer.
    if (!(await exists(join(v2Parent, "cgroup.freeze")))) {
      await removeTree(v2Parent, timeouts.removeMs);
      v2Parent = undefined;
    }
  }
  let freezerParent: string | undefined;
  if (layout.kind !== "v2" && v2Parent === undefined) {
    const freezer = layout.v1.get("freezer");
    if (freezer === undefined) throw new BurrowError(Code.FailedPrecondition, "neither cgroup2 freezing nor a v1 freezer hierarchy is available", { reason: "unsupported_layout" });
    freezerParent = join(freezer, parentName);
  }
  for (const dir of new Set([...v1Parents.values(), ...(freezerParent ? [freezerParent] : [])])) await ensureDir(dir);

  const control = v2Parent !== undefined ? "cgroup2" : "v1-freezer";
  options.logger?.info(`cgroups: ${layout.kind} layout, ${control} control, parent ${parentName}`);
  return new CgroupManagerImpl({ layout: layout.kind, control, v1Parents, v2Parent, freezerParent, timeouts });
}

/**
 * Pure v2: controllers must be enabled in `cgroup.subtree_control` of every ancestor. Our own cgroup can
 * enable them only if it holds no processes (the "no internal processes" rule), unless it is the root.
 */
async function delegateControllers(layout: CgroupLayout, v2Parent: string): Promise<void> {
  const wanted = V2_CONTROLLERS.filter((c) => layout.v2Controllers.includes(c));
  const line = wanted.map((c) => `+${c}`).join(" ");
  try {
    await writeText(join(layout.v2 ?? "", "cgroup.subtree_control"), line);
  } catch (e) {
    throw new BurrowError(
      Code.FailedPrecondition,
      `cannot enable ${wanted.join(", ")} below ${layout.v2}: run Burrow in a cgroup of its own with delegated controllers (e.g. systemd Delegate=yes and the process moved into a leaf)`,
      { reason: "controllers_not_delegated", cause: e },
    );
  }
  await ensureDir(v2Parent);
  await writeText(join(v2Parent, "cgroup.subtree_control"), line);
}

interface ManagerInit {
  layout: CgroupLayoutKind;
  control: "cgroup2" | "v1-freezer";
  v1Parents: ReadonlyMap<V1Controller, string>;
  v2Parent: string | undefined;
  freezerParent: string | undefined;
  timeouts: SandboxCgroupTimeouts;
}

class CgroupManagerImpl implements BurrowCgroupManager {
  readonly layout: CgroupLayoutKind;
  readonly control: "cgroup2" | "v1-freezer";
  readonly #init: ManagerInit;

  constructor(init: ManagerInit) {
    this.#init = init;
    this.layout = init.layout;
    this.control = init.control;
  }

  /** Every instance parent directory in use. */
  #parents(): string[] {
    const { v1Parents, v2Parent, freezerParent } = this.#init;
    return [...new Set([...v1Parents.values(), v2Parent, freezerParent].filter((d): d is string => d !== undefined))];
  }

  async open(sandboxId: string): Promise<SandboxCgroup> {
    if (!SANDBOX_ID_PATTERN.test(sandboxId)) {
      throw new BurrowError(Code.InvalidArgument, `sandbox id '${sandboxId}' must match ${SANDBOX_ID_PATTERN}`);
    }
    const { v1Parents, v2Parent, freezerParent, timeouts } = this.#init;
    const at = (parent: string | undefined) => (parent === undefined ? undefined : join(parent, sandboxId));
    let limits: LimitsBackend;
    if (this.layout === "v2") {
      limits = new V2Limits(at(v2Parent) ?? "");
    } else {
      const memory = at(v1Parents.get("memory"));
      if (memory === undefined) throw new BurrowError(Code.FailedPrecondition, "no v1 memory hierarchy", { reason: "unsupported_layout" });
      limits = new V1Limits({
        memory,
        cpu: at(v1Parents.get("cpu")),
        cpuacct: at(v1Parents.get("cpuacct")),
        pids: at(v1Parents.get("pids")),
      });
    }
    const controlDir = at(v2Parent) ?? at(freezerParent) ?? "";
    const control: ControlBackend = v2Parent !== undefined ? new V2Control(controlDir) : new V1FreezerControl(controlDir);
    const dirs = this.#parents().map((p) => join(p, sandboxId));
    for (const dir of dirs) await ensureDir(dir);
    return new SandboxCgroupImpl({ sandboxId, dirs, limits, control, timeouts });
  }

  /** Union over all hierarchies, so a sandbox half-created before a crash is found too. */
  async list(): Promise<string[]> {
    const ids = new Set<string>();
    for (const parent of this.#parents()) for (const name of await childDirs(parent)) ids.add(name);
    return [...ids].sort();
  }

  async close(): Promise<void> {
    for (const parent of this.#parents()) {
      if ((await childDirs(parent)).length > 0) continue; // sandboxes still live: keep the parent
      await removeTree(parent, this.#init.timeouts.removeMs);
    }
  }
}
