// Per-test scratch space for real sandboxes. Everything launched through the fixture is killed
// by pid and every directory removed in cleanup(), which also fails the test if any mount under
// the scratch dir survived on the host.
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  isSandboxInitAlive,
  launcherBinaryPath,
  launchSandbox,
  readProcStat,
  type LaunchOptions,
  type LaunchedSandbox,
} from "../../src/launcher/index.js";
import { ensureReaper, reaperBinaryPath, reaperPaths, stopReaper, type ReaperPaths } from "../../src/reaper/reaper.js";
import { DEFAULT_UID_RANGES_BASE, DEFAULT_USERNS_OWNERS } from "../../src/config.js";
import { expect, vi } from "vitest";
import { TEST_UID_BASE, TEST_UID_COUNT } from "./base-rootfs.js";
import { POLL } from "./poll.js";

export interface SandboxDirs {
  root: string;
  upper: string;
  work: string;
  merged: string;
  log: string;
}

export interface LaunchedTestSandbox extends LaunchedSandbox {
  dirs: SandboxDirs;
}

/** Host mount points at or below `prefix`. */
export async function mountsUnder(prefix: string): Promise<string[]> {
  const text = await readFile("/proc/self/mounts", "utf8");
  return text.split("\n").map((l) => l.split(" ")[1] ?? "").filter((p) => p === prefix || p.startsWith(`${prefix}/`));
}

/** Host pids of `pid` and all its descendants (via /proc/<pid>/task/<tid>/children). */
export async function processTree(pid: number): Promise<number[]> {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    const tasks = await readdir(`/proc/${out[i]}/task`).catch(() => [] as string[]);
    for (const t of tasks) {
      const kids = await readFile(`/proc/${out[i]}/task/${t}/children`, "utf8").catch(() => "");
      for (const k of kids.split(" ")) if (k.trim() !== "") out.push(Number(k));
    }
  }
  return out;
}

export class SandboxFixture {
  private scratch: string | undefined;
  private readonly launched: LaunchedSandbox[] = [];
  private n = 0;
  /** The fixture's own burrow-reaper (launches go through one), started on first use. */
  private reaper: { paths: ReaperPaths; pid: number } | undefined;

  /** Host dir bound at /.burrow; set it before the first launch. */
  runtime = "";

  constructor(private readonly lower: string) {}

  async dir(): Promise<string> {
    this.scratch ??= await mkdtemp(join(tmpdir(), "burrow-launcher-test-"));
    return this.scratch;
  }

  async newDirs(): Promise<SandboxDirs> {
    const root = join(await this.dir(), `sb${this.n++}`);
    const dirs = { root, upper: join(root, "upper"), work: join(root, "work"), merged: join(root, "merged"), log: join(root, "log") };
    for (const d of [dirs.upper, dirs.work, dirs.merged]) await mkdir(d, { recursive: true });
    return dirs;
  }

  /** The reaper launches go through unless a test passes its own. */
  async reaperPaths(): Promise<ReaperPaths> {
    if (!this.reaper) {
      const paths = reaperPaths(await this.dir());
      const launcher = launcherBinaryPath();
      this.reaper = { paths, pid: await ensureReaper(paths, { reaper: reaperBinaryPath(launcher), launcher }) };
    }
    return this.reaper.paths;
  }

  /** Launch with test defaults (those of the orchestrator: own owner and uid range per sandbox); `command` is required. */
  async launch(opts: Partial<LaunchOptions> & Pick<LaunchOptions, "command">, signal?: AbortSignal): Promise<LaunchedTestSandbox> {
    const dirs = await this.newDirs();
    const reaper = opts.reaper ?? (await this.reaperPaths());
    const sb = await launchSandbox(
      {
        lower: [this.lower],
        upper: dirs.upper,
        work: dirs.work,
        merged: dirs.merged,
        runtime: this.runtime,
        hostname: "sbx-test",
        uidBase: TEST_UID_BASE,
        uidCount: TEST_UID_COUNT,
        usernsOwners: DEFAULT_USERNS_OWNERS,
        uidRangesBase: DEFAULT_UID_RANGES_BASE,
        log: dirs.log,
        ...opts,
        reaper,
      },
      signal,
    );
    this.launched.push(sb);
    return { ...sb, dirs };
  }

  /**
   * Run a shell script inside a fresh sandbox and return its output. The script's output goes to
   * /tmp/out in the sandbox, i.e. into the upper dir on the host; the sandbox then idles.
   */
  async run(script: string, opts: Partial<LaunchOptions> = {}): Promise<{ out: string; sandbox: LaunchedTestSandbox }> {
    const wrapped = `{ ${script}\n} > /tmp/.out 2>&1; mv /tmp/.out /tmp/out; exec sleep infinity`;
    const sandbox = await this.launch({ ...opts, command: ["/bin/sh", "-c", wrapped] });
    // The file appears (renamed into place) once the script has finished.
    const out = await vi.waitFor(() => readFile(join(sandbox.dirs.upper, "tmp/out"), "utf8"), POLL);
    return { out, sandbox };
  }

  /** SIGKILL a sandbox init and wait until it and its whole tree are gone. */
  async kill(sb: LaunchedSandbox): Promise<void> {
    const tree = await processTree(sb.pid);
    if (isSandboxInitAlive(sb.pid, sb.startTime)) process.kill(sb.pid, "SIGKILL");
    await vi.waitFor(() => expect(tree.filter(isRunning), "sandbox processes still running").toEqual([]), POLL);
  }

  async cleanup(): Promise<void> {
    for (const sb of this.launched.splice(0)) await this.kill(sb);
    if (this.reaper) {
      const { paths, pid } = this.reaper;
      this.reaper = undefined;
      await stopTestReaper(paths, pid);
    }
    if (this.scratch === undefined) return;
    const left = await mountsUnder(this.scratch);
    await rm(this.scratch, { recursive: true, force: true });
    this.scratch = undefined;
    if (left.length > 0) throw new Error(`mounts left on the host: ${left.join(", ")}`);
  }
}

/** Stop a reaper a test started and wait until it has exited (vi.waitFor: expect.poll is for tests, not hooks). */
export async function stopTestReaper(paths: ReaperPaths, pid: number): Promise<void> {
  await stopReaper(paths);
  await vi.waitFor(() => expect(isRunning(pid), "the reaper still runs").toBe(false), POLL);
}

/** Alive and not a zombie (a dead init lingers as a zombie until the host's init reaps it). */
export function isRunning(pid: number): boolean {
  const st = readProcStat(pid);
  return st !== undefined && st.state !== "Z" && st.state !== "X";
}

/** A runtime dir for tests that do not need node: one file, to check the read-only bind. */
export async function makeMiniRuntime(dir: string): Promise<string> {
  const rt = join(dir, "runtime");
  await mkdir(rt, { recursive: true });
  await writeFile(join(rt, "hello.txt"), "hello from the runtime\n");
  return rt;
}
