// Runs the burrow-sandbox launcher and turns its one-line JSON answer into a typed result.
// The launcher exits as soon as the sandbox runs; the sandbox init is not our child, so it
// survives this process (restart safety) and is tracked by (pid, startTime) instead.
import { spawn } from "node:child_process";
import { access, constants } from "node:fs/promises";
import { LaunchError, type LaunchErrorCode } from "./launch-error.js";
import { launcherBinaryPath } from "./launcher-binary.js";
import { readProcStat } from "./proc-stat.js";
import { DEFAULT_USERNS_OWNERS, type UidRange } from "../config.js";
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
  /** Set no_new_privs for everything inside. Breaks sudo/su (setuid) in the sandbox. @default false */
  noNewPrivileges?: boolean;
  /** The command's whole environment (PATH defaults to the usual system PATH when absent). */
  env?: Readonly<Record<string, string>>;
  /** The command run (and restarted when it dies) by the sandbox init, resolved inside the sandbox. */
  command: readonly string[];
  /** How long the init waits after SIGTERM before killing everything. @default 2000 */
  stopGraceMs?: number;
  /** @default launcherBinaryPath() */
  binaryPath?: string;
  /**
   * Run the launcher through this burrow-reaper so the sandbox init becomes the reaper's child and is reaped
   * when it exits. Without it the init is handed to the host's PID 1, which may not reap.
   */
  reaper?: ReaperPaths;
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
  if (o.noNewPrivileges) args.push("--no-new-privs");
  if (o.stopGraceMs !== undefined) args.push("--grace-ms", String(o.stopGraceMs));
  for (const [k, v] of Object.entries(o.env ?? {})) args.push("--env", `${k}=${v}`);
  args.push("--", ...o.command);
  return args;
}

function codeForStep(step: string): LaunchErrorCode {
  if (step === "args") return "invalid_argument";
  if (step === "exec") return "exec_failed";
  return "setup_failed";
}

/** Start a sandbox; resolves once its command has been exec'd inside it. */
export async function launchSandbox(opts: LaunchOptions, signal?: AbortSignal): Promise<LaunchedSandbox> {
  if (opts.command.length === 0) throw new LaunchError("invalid_argument", "command is empty");
  const bin = opts.binaryPath ?? launcherBinaryPath();
  try {
    await access(bin, constants.X_OK);
  } catch (cause) {
    throw new LaunchError("binary_missing", `${bin} is not executable; run buildNative()`, { cause });
  }
  if (signal?.aborted) throw new LaunchError("aborted", "launch aborted", { cause: signal.reason });

  const { code, stdout, stderr } = opts.reaper
    ? await launchThroughReaper(opts.reaper, launcherArgs(opts))
    : await launchAsChild(bin, launcherArgs(opts), signal);

  const line = stdout.trim().split("\n").pop() ?? "";
  let parsed: { pid?: unknown; owner?: unknown; uidBase?: unknown; error?: unknown; step?: unknown };
  try {
    parsed = JSON.parse(line) as typeof parsed;
  } catch (cause) {
    if (signal?.aborted) throw new LaunchError("aborted", "launch aborted", { cause: signal.reason });
    throw new LaunchError("bad_output", `launcher exited ${code} with ${JSON.stringify(stdout + stderr)}`, { cause });
  }
  if (typeof parsed.pid === "number" && code === 0) {
    const pid = parsed.pid;
    if (signal?.aborted) {
      // The abort raced the commit: the sandbox exists but nobody asked for it any more.
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Already gone.
      }
      throw new LaunchError("aborted", "launch aborted", { cause: signal.reason });
    }
    const st = readProcStat(pid);
    if (!st) throw new LaunchError("setup_failed", `sandbox init ${pid} exited right after starting`, { step: "init" });
    return {
      pid,
      startTime: st.startTime,
      usernsOwner: typeof parsed.owner === "number" ? parsed.owner : 0,
      hostUidBase: typeof parsed.uidBase === "number" ? parsed.uidBase : opts.uidBase,
    };
  }
  const step = typeof parsed.step === "string" ? parsed.step : "unknown";
  const message = typeof parsed.error === "string" ? parsed.error : line;
  throw new LaunchError(codeForStep(step), `${step}: ${message}`, { step });
}

interface LauncherOutcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Through the reaper, the launcher's exit code is not seen: success is the `{"pid":N}` line. The request is not
 * cancelled on abort (the launcher is not our child); the caller kills a sandbox that arrives after an abort.
 */
async function launchThroughReaper(reaper: ReaperPaths, args: string[]): Promise<LauncherOutcome> {
  try {
    const output = await runThroughReaper(reaper, args);
    const last = output.trim().split("\n").pop() ?? "";
    return { code: last.startsWith('{"pid"') ? 0 : 1, stdout: output, stderr: "" };
  } catch (cause) {
    throw new LaunchError("binary_missing", `burrow-reaper at ${reaper.socket} is not answering`, { cause });
  }
}

function launchAsChild(bin: string, args: string[], signal?: AbortSignal): Promise<LauncherOutcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"], env: {} });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    // SIGKILL is enough: until the launcher commits, the sandbox child has a parent-death signal.
    const onAbort = () => child.kill("SIGKILL");
    signal?.addEventListener("abort", onAbort, { once: true });
    child.on("error", (err) => {
      signal?.removeEventListener("abort", onAbort);
      reject(new LaunchError("binary_missing", `cannot run ${bin}: ${err.message}`, { cause: err }));
    });
    child.on("close", (code) => {
      signal?.removeEventListener("abort", onAbort);
      resolve({ code, stdout, stderr });
    });
  });
}
