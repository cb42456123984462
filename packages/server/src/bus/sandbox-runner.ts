// The real SandboxRunner behind triggers and tasks: runs commands through envd in an existing sandbox, or in a fresh
// sandbox created from a template through the SandboxService (so it is stored, timed out and announced like any
// other) and killed afterwards unless asked to keep it. Each run publishes `proc` events (started, exited, and
// output when asked for, merged and rate-limited by OutputEventThrottle) on the sandbox's subjects.
import { posix } from "node:path";
import { publishSandboxEvent, type Bus, type RunOptions, type RunResult, type RunTarget, type SandboxRunner } from "@burrow/bus";
import { readFile, sendSignal, streamProcess, writeFile, type EnvdTarget } from "@burrow/orchestrator";
import type { Logger } from "pino";
import { BurrowError, Code, codeFromAbort } from "@burrow/protocol";
import type { UpstreamResolver } from "../gateway/gateway.js";
import type { SandboxService } from "../lifecycle/sandbox-service.js";
import type { SandboxRow } from "../store/sandboxes.js";
import { liveEnvd } from "./live-envd.js";
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
}

const DEFAULT_TIMEOUT_MS = 60_000;

class OutputTail {
  private chunks: Buffer[] = [];
  private size = 0;
  constructor(private readonly limit: number) {}
  push(b: Uint8Array): void {
    this.chunks.push(Buffer.from(b));
    this.size += b.length;
    while (this.size > this.limit && this.chunks.length > 1) this.size -= this.chunks.shift()!.length;
  }
  text(): string {
    const all = Buffer.concat(this.chunks);
    return all.subarray(Math.max(0, all.length - this.limit)).toString("utf8");
  }
}

export class ServerSandboxRunner implements SandboxRunner {
  private readonly outputLimits: OutputEventLimits;

  constructor(private readonly o: ServerSandboxRunnerOptions) {
    this.outputLimits = resolveOutputEventLimits(o.outputLimits);
  }

  /** The live sandbox as an envd target, or NotFound in the API's words. */
  target(sandboxId: string): { row: SandboxRow; envd: EnvdTarget } {
    return liveEnvd(this.o.sandboxes, this.o.upstream, sandboxId);
  }

  async runCommand(target: RunTarget, cmd: string, opts: ServerRunOptions): Promise<RunResult> {
    const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    let fresh: string | undefined;
    let sandboxId: string;
    if ("sandboxId" in target) {
      sandboxId = target.sandboxId;
    } else {
      const grace = this.o.freshSandboxGraceSec ?? 300;
      const row = await this.o.sandboxes.create({
        template: target.template,
        timeoutSec: Math.ceil(timeoutMs / 1000) + grace,
        metadata: { "burrow.runner": "fresh" },
        ...(opts.signal ? { signal: opts.signal } : {}),
      });
      fresh = sandboxId = row.sandboxId;
    }
    try {
      const { row, envd } = this.target(sandboxId);
      for (const input of opts.inputs ?? []) await this.copyIn(input, envd, opts);
      return { ...(await this.exec(row, envd, cmd, opts, timeoutMs)), sandboxId };
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
