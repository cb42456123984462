// Runs the burrow-sandbox launcher and turns its answer into a typed result. There is one way to run it: through
// burrow-reaper, so that every sandbox init becomes the reaper's child (and is reaped when it exits, whatever the
// host's PID 1 does) and a launch whose caller gives up is killed by the reaper. The init is not our child; it
// survives this process (restart safety) and is tracked by (pid, startTime) instead.
import { LaunchError } from "./launch-error.js";
import { launchFailure, parseLaunchReport, type LaunchReport } from "./launch-report.js";
import { readProcStat } from "./proc-stat.js";
import { DEFAULT_USERNS_OWNERS, type UidRange } from "../config.js";
import { netPlumbingArgs, type NetPlumbing } from "../network/net-plumbing.js";
import { runThroughReaper, type ReaperPaths } from "../reaper/reaper.js";

export interface LaunchOptions {
  /** Read-only layers, top first. */
  lower: readonly string[];
  /** Writable layer; its root is chowned to `uidBase` if it is not already in the sandbox range. */
  upper: string;
  /** Empty overlay work dir on the same filesystem as `upper`. */
  work: string;
  /** Mount point for the overlay (only ever mounted inside the sandbox's mount namespace). */
  merged: string;
  /** Host directory bound read-only at /.burrow inside. */
  runtime: string;
  hostname: string;
  /** Host uid (and gid) that is root inside the sandbox. */
  uidBase: number;
  /** @default 65536 */
  uidCount?: number;
  /**
   * Host uids the launcher leases one of (host-wide, for as long as the sandbox lives) to own the sandbox's user
   * namespace, so the kernel's per-user budgets (inotify, fanotify, message queues, namespaces…) used inside the
   * sandbox are charged to that uid instead of host root's. Must not overlap the uid range of any sandbox.
   * @default DEFAULT_USERNS_OWNERS
   */
  usernsOwners?: UidRange;
  /**
   * Give each sandbox host uids of its own: the sandbox holding owner `usernsOwners.base + i` maps root to host uid
   * `uidRangesBase + i * uidCount`, so what the kernel counts per host uid (pipe buffers, epoll watches) is its
   * own too. Layers and the writable layer are mounted idmapped, so files keep `uidBase` ownership on disk.
   * `upper` and `work` must then be siblings. Without it every sandbox runs as `uidBase`….
   */
  uidRangesBase?: number;
  /** cgroup directories (v1 or v2) the sandbox starts in; it is placed there before it exists. */
  cgroups?: readonly string[];
  /** File receiving the init's and the command's stdout/stderr (appended). */
  log: string;
  /** What /proc/sys/kernel/random/boot_id shows inside (a lower-case UUID); without it, the host's. */
  bootId?: string;
  /** Set no_new_privs for everything inside. Breaks sudo/su (setuid) in the sandbox. @default false */
  noNewPrivileges?: boolean;
  /** The command's whole environment (PATH defaults to the usual system PATH when absent). */
  env?: Readonly<Record<string, string>>;
  /** The command run (and restarted when it dies) by the sandbox init, resolved inside the sandbox. */
  command: readonly string[];
  /** How long the init waits after SIGTERM before killing everything. @default 2000 */
  stopGraceMs?: number;
  /** The burrow-reaper that runs the launcher (ensureReaper) and parents the sandbox init. */
  reaper: ReaperPaths;
  /**
   * The sandbox's network (NetworkManager.reserve), plumbed by the launcher before the command starts. Without it
   * the sandbox has only its loopback.
   */
  network?: NetPlumbing;
  /** Host directories bound read-write (nosuid, nodev; idmapped like the layers) at absolute paths inside. */
  volumes?: ReadonlyArray<{ hostDir: string; path: string }>;
}

export interface LaunchedSandbox {
  /** Host pid of the sandbox init (pid 1 inside). */
  pid: number;
  /** Field 22 of /proc/<pid>/stat, to tell this init from a later process reusing the pid. */
  startTime: string;
  /** Host uid that owns the sandbox's user namespace. */
  usernsOwner: number;
  /** Host uid of root in the sandbox (`uidBase`, or the start of its own range). */
  hostUidBase: number;
}

/** Build the launcher's argv (exported for diagnostics and tests of the contract). */
export function launcherArgs(o: LaunchOptions): string[] {
  const args: string[] = [];
  for (const l of o.lower) args.push("--lower", l);
  args.push("--upper", o.upper, "--work", o.work, "--merged", o.merged, "--runtime", o.runtime);
  args.push("--hostname", o.hostname, "--uid-base", String(o.uidBase), "--uid-count", String(o.uidCount ?? 65536));
  const owners = o.usernsOwners ?? DEFAULT_USERNS_OWNERS;
  args.push("--owner-base", String(owners.base), "--owner-count", String(owners.count));
  if (o.uidRangesBase !== undefined) args.push("--ranges-base", String(o.uidRangesBase));
  for (const c of o.cgroups ?? []) args.push("--cgroup", c);
  args.push("--log", o.log);
  if (o.bootId !== undefined) args.push("--boot-id", o.bootId);
  if (o.noNewPrivileges) args.push("--no-new-privs");
  if (o.stopGraceMs !== undefined) args.push("--grace-ms", String(o.stopGraceMs));
  if (o.network) args.push(...netPlumbingArgs(o.network));
  for (const v of o.volumes ?? []) args.push("--volume", `${v.hostDir}=${v.path}`);
  for (const [k, v] of Object.entries(o.env ?? {})) args.push("--env", `${k}=${v}`);
  args.push("--", ...o.command);
  return args;
}

/**
 * Start a sandbox; resolves once its command has been exec'd inside it. On abort the launch is canceled (the
 * reaper kills the launcher) and this rejects with `aborted`, leaving no sandbox behind.
 */
export async function launchSandbox(opts: LaunchOptions, signal?: AbortSignal): Promise<LaunchedSandbox> {
  if (opts.command.length === 0) throw new LaunchError("invalid_argument", "command is empty");
  const aborted = () => new LaunchError("aborted", "launch aborted", { cause: signal?.reason });
  if (signal?.aborted) throw aborted();
  let output: string;
  try {
    output = await runThroughReaper(opts.reaper, launcherArgs(opts), signal);
  } catch (cause) {
    if (signal?.aborted) throw aborted();
    throw new LaunchError("reaper_unavailable", `burrow-reaper at ${opts.reaper.socket} is not answering`, { cause });
  }
  let report: LaunchReport;
  try {
    report = parseLaunchReport(output);
  } catch (error) {
    // A launcher killed by the cancel printed no report.
    throw signal?.aborted ? aborted() : error;
  }
  if (!report.ok) throw signal?.aborted ? aborted() : launchFailure(report);
  if (signal?.aborted) {
    // The cancel came after the launcher had committed: the sandbox exists, but nobody wants it any more.
    killQuietly(report.pid);
    throw aborted();
  }
  const st = readProcStat(report.pid);
  if (!st) throw new LaunchError("setup_failed", `sandbox init ${report.pid} exited right after starting`, { step: "init" });
  return { pid: report.pid, startTime: st.startTime, usernsOwner: report.owner, hostUidBase: report.uidBase ?? opts.uidBase };
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // Already gone.
  }
}
