// The real SandboxRunner behind triggers and tasks: runs commands through envd, and code through the sandbox's
// execution server (code-runner.ts), in an existing sandbox or in a fresh sandbox created from a template through
// the SandboxService (so it is stored, timed out and announced like any other) and killed afterwards unless asked to
// keep it. Each command publishes `proc` events (started, exited, and output when asked for, merged and
// rate-limited by OutputEventThrottle) on the sandbox's subjects; each code run publishes `code` events.
import { posix } from "node:path";
import { randomUUID } from "node:crypto";
import { publishSandboxEvent, type Bus, type CodeSpec, type RunOptions, type RunResult, type RunTarget, type SandboxRunner } from "@burrow/bus";
import { readFile, sendSignal, streamProcess, writeFile, type EnvdTarget } from "@burrow/orchestrator";
import type { Logger } from "pino";
import { BurrowError, CODE_INTERPRETER_PORT, Code, codeFromAbort } from "@burrow/protocol";
import type { UpstreamResolver } from "../gateway/gateway.js";
import type { SandboxService } from "../lifecycle/sandbox-service.js";
import type { SandboxRow } from "../store/sandboxes.js";
import { runCodeInSandbox } from "./code-runner.js";
import { CODE_LANGUAGES, normalizeCodeLanguage, probe, type ExecutionTarget } from "./execution-client.js";
import { liveEnvd } from "./live-envd.js";
import type { FreshSandboxAdmission } from "../teams/fresh-sandbox-quota.js";
import { OutputTail } from "./output-tail.js";
import { OutputEventThrottle, resolveOutputEventLimits, type OutputEventLimits } from "./output-event-throttle.js";

/** A file copied into the target sandbox before the command runs (how one pipeline stage hands data to the next). */
export interface FileInput {
  /** Sandbox to read from. */
  sandboxId: string;
  /** Absolute path there. */
  path: string;
  /** Absolute path in the target sandbox. @default `path` */
  to?: string;
}

/**
 * Burrow's extensions of the bus's process settings. They travel inside `process` because the bus's TaskWorker hands
 * a task's process settings (and terminal settings) to the runner as they are.
 */
export interface ServerRunExtensions {
  /** Fresh sandboxes only: leave it running afterwards (its id is in the result). @default false */
  keepSandbox?: boolean;
  /** Publish `proc.output` events (not durable) with each chunk. @default false */
  outputEvents?: boolean;
  inputs?: FileInput[];
  /**
   * The API key of the rule's or task's maker (set by the server, never by clients): a fresh sandbox is created with
   * it, so it belongs to that key's team like a sandbox the team created itself.
   */
  ownerKeyId?: number | null;
}

export type ServerRunOptions = RunOptions & ServerRunExtensions;

export interface ServerSandboxRunnerOptions {
  sandboxes: SandboxService;
  /** The gateway's mapping of a sandbox port to where it is reachable; envd is reached through it too. */
  upstream: UpstreamResolver;
  bus?: Bus | undefined;
  logger: Logger;
  /** Output kept per stream in a RunResult (the tail). @default 1 MiB */
  maxOutputBytes?: number;
  /** Largest file an input may copy. @default 64 MiB */
  maxInputBytes?: number;
  /** Lifetime of fresh sandboxes beyond the command's timeout, in seconds. @default 300 */
  freshSandboxGraceSec?: number;
  /** Merging window and byte budget of `proc.output` events (see OutputEventLimits for defaults and env names). */
  outputLimits?: Partial<OutputEventLimits>;
  /**
   * Team quotas of a fresh sandbox (teams/fresh-sandbox-quota.ts), asked before it is created and released once it
   * is stored; undefined until the server's teams are open.
   */
  admitFresh?: () => FreshSandboxAdmission | undefined;
  /**
   * On a node of a cluster sharing its bus: the node that must run a task in this target (cluster/task-nodes.ts);
   * undefined there, or absent: this server.
   */
  nodeFor?: ((target: RunTarget) => string | undefined) | undefined;
}

const DEFAULT_TIMEOUT_MS = 60_000;

export class ServerSandboxRunner implements SandboxRunner {
  private readonly outputLimits: OutputEventLimits;

  constructor(private readonly o: ServerSandboxRunnerOptions) {
    this.outputLimits = resolveOutputEventLimits(o.outputLimits);
  }

  nodeFor(target: RunTarget): string | undefined {
    return this.o.nodeFor?.(target);
  }

  /** The live sandbox as an envd target, or NotFound in the API's words. */
  target(sandboxId: string): { row: SandboxRow; envd: EnvdTarget } {
    return liveEnvd(this.o.sandboxes, this.o.upstream, sandboxId);
  }

  /** The live sandbox's execution server, or NotFound in the API's words. */
  private executionServer(sandboxId: string): { row: SandboxRow; server: ExecutionTarget } {
    const live = this.o.sandboxes.live(sandboxId);
    if (!live) throw new BurrowError(Code.NotFound, `sandbox "${sandboxId}" doesn't exist or is not running`);
    const { host, port } = this.o.upstream(live.record, CODE_INTERPRETER_PORT);
    return { row: live.row, server: { host, port, accessToken: live.row.envdAccessToken } };
  }

  /**
   * Refuses (FailedPrecondition) a running sandbox code cannot run in: nothing answers on its execution server's
   * port. A sandbox that is not running is left to the run (it may be resumed by then).
   */
  async requireExecutionServer(sandboxId: string, signal?: AbortSignal): Promise<void> {
    if (!this.o.sandboxes.live(sandboxId)) return;
    const { server } = this.executionServer(sandboxId);
    await probe(sandboxId, server, signal);
  }

  async runCommand(target: RunTarget, cmd: string, opts: ServerRunOptions): Promise<RunResult> {
    const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    return this.inSandbox(target, opts, timeoutMs, (row, envd) => this.exec(row, envd, cmd, opts, timeoutMs));
  }

  /**
   * Code through the sandbox's execution server (code-interpreter sandboxes): in the language's default context,
   * or in a context of its own in `cwd`. A sandbox without the server, or a language it lacks, is a clear error.
   */
  async runCode(target: RunTarget, code: CodeSpec, opts: ServerRunOptions): Promise<RunResult> {
    const language = normalizeCodeLanguage(code.language);
    if (language === undefined) {
      throw new BurrowError(Code.InvalidArgument, `language "${code.language}" is not supported for code runs (${CODE_LANGUAGES.join(", ")})`);
    }
    if (opts.user !== undefined || opts.terminal !== undefined) {
      throw new BurrowError(Code.InvalidArgument, "process.user and terminal apply to cmd only: code runs in the execution server's kernels");
    }
    const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    return this.inSandbox(target, opts, timeoutMs, (row) =>
      runCodeInSandbox(
        { bus: this.o.bus, logger: this.o.logger, outputLimits: this.outputLimits, maxOutputBytes: this.o.maxOutputBytes ?? 1024 * 1024 },
        row,
        this.executionServer(row.sandboxId).server,
        {
          code: code.code,
          language,
          runId: opts.taskId ?? randomUUID(),
          envVars: opts.env,
          cwd: opts.cwd,
          timeoutMs,
          signal: opts.signal,
        },
      ),
    );
  }

  /** Runs `fn` in the target: the sandbox named, or a fresh one from the template (killed afterwards unless kept). */
  private async inSandbox(
    target: RunTarget,
    opts: ServerRunOptions,
    timeoutMs: number,
    fn: (row: SandboxRow, envd: EnvdTarget) => Promise<Omit<RunResult, "sandboxId">>,
  ): Promise<RunResult> {
    let fresh: string | undefined;
    let sandboxId: string;
    if ("sandboxId" in target) {
      sandboxId = target.sandboxId;
    } else {
      const grace = this.o.freshSandboxGraceSec ?? 300;
      const timeoutSec = Math.ceil(timeoutMs / 1000) + grace;
      const reservation = await this.o.admitFresh?.()?.(opts.ownerKeyId ?? null, target.template, timeoutSec, opts.signal);
      try {
        const row = await this.o.sandboxes.create({
          template: target.template,
          timeoutSec,
          metadata: { "burrow.runner": "fresh" },
          apiKeyId: opts.ownerKeyId ?? null,
          ...(opts.signal ? { signal: opts.signal } : {}),
        });
        fresh = sandboxId = row.sandboxId;
      } finally {
        // A hold in the cluster's ledger counts the sandbox until every node does.
        reservation?.release(fresh !== undefined ? [fresh] : []);
      }
    }
    try {
      const { row, envd } = this.target(sandboxId);
      for (const input of opts.inputs ?? []) await this.copyIn(input, envd, opts);
      return { ...(await fn(row, envd)), sandboxId };
    } finally {
      if (fresh && !opts.keepSandbox) {
        await this.o.sandboxes.kill(fresh).catch((err: unknown) => this.o.logger.error({ err, sandboxId: fresh }, "could not kill a runner's fresh sandbox"));
      }
    }
  }

  private async copyIn(input: FileInput, to: EnvdTarget, opts: ServerRunOptions): Promise<void> {
    const from = this.target(input.sandboxId);
    const data = await readFile(from.envd, input.path, { user: opts.user, maxBytes: this.o.maxInputBytes ?? 64 * 1024 * 1024, signal: opts.signal });
    await writeFile(to, posix.resolve("/", input.to ?? input.path), data, { user: opts.user, signal: opts.signal });
  }

  private async exec(row: SandboxRow, envd: EnvdTarget, cmd: string, opts: ServerRunOptions, timeoutMs: number): Promise<Omit<RunResult, "sandboxId">> {
    const limit = this.o.maxOutputBytes ?? 1024 * 1024;
    const stdout = new OutputTail(limit);
    const stderr = new OutputTail(limit);
    const base = { sandboxId: row.sandboxId, templateId: row.templateId, metadata: row.metadata };
    let pid = 0;
    let started = false;
    const publish = (e: Parameters<typeof publishSandboxEvent>[1], durable: boolean) => {
      if (!this.o.bus) return Promise.resolve();
      return publishSandboxEvent(this.o.bus, e, { durable }).then(
        () => undefined,
        (err: unknown) => this.o.logger.warn({ err, sandboxId: row.sandboxId }, "could not publish a process event"),
      );
    };
    const output = opts.outputEvents && this.o.bus
      ? new OutputEventThrottle(this.outputLimits, async (chunks) => {
        for (const c of chunks) {
          await publish({
            ...base, category: "proc", type: "output", pid, stream: c.stream, dataBase64: c.data.toString("base64"),
            ...(c.droppedBytes > 0 ? { droppedBytes: c.droppedBytes } : {}),
          }, false);
        }
      })
      : undefined;
    try {
      for await (const e of streamProcess(envd, {
        // As the E2B SDK runs commands.
        cmd: "/bin/bash",
        args: ["-l", "-c", cmd],
        user: opts.user,
        cwd: opts.cwd,
        envs: opts.env,
        pty: opts.terminal?.pty ? { cols: opts.terminal.cols ?? 80, rows: opts.terminal.rows ?? 24 } : undefined,
        timeoutMs,
        signal: opts.signal,
      })) {
        if (e.kind === "start") {
          pid = e.pid;
          started = true;
          await publish({ ...base, category: "proc", type: "started", pid, cmd }, true);
        } else if (e.kind === "data") {
          (e.stream === "stderr" ? stderr : stdout).push(e.data);
          output?.push(e.stream, e.data);
        } else {
          // The last output goes out before the exit, as it happened.
          await output?.flush();
          await publish({ ...base, category: "proc", type: "exited", pid, exitCode: e.exitCode, ...(e.error ? { error: e.error } : {}) }, true);
          return { exitCode: e.exitCode, stdout: stdout.text(), stderr: stderr.text() };
        }
      }
      throw new BurrowError(Code.Unavailable, "envd closed the process stream without an end event");
    } catch (err) {
      const failure =
        err instanceof BurrowError || codeFromAbort(err) !== undefined
          ? BurrowError.from(err)
          : new BurrowError(Code.Internal, `command failed: ${(err as Error).message}`, { cause: err });
      const error = failure.code === Code.DeadlineExceeded ? new BurrowError(Code.DeadlineExceeded, `command timed out after ${timeoutMs} ms`, { cause: err }) : failure;
      if (started) {
        await output?.flush();
        // envd keeps processes whose client went away; a caller that gave up does not want it running on.
        if (opts.signal?.aborted) await sendSignal(envd, pid, "SIGKILL", { user: opts.user }).catch(() => undefined);
        await publish({ ...base, category: "proc", type: "exited", pid, exitCode: -1, error: error.message }, true);
      }
      throw error;
    }
  }
}
