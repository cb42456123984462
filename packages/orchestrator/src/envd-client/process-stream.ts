// A process in a sandbox as a stream of events: envd's Process.Start, with output handed on as it arrives.
import { BurrowError, Code } from "@burrow/protocol";
import { envdErrorFrom } from "./envd-error.js";
import type { EnvdTarget } from "./envd-target.js";
import { processClient, rpcHeaders } from "./transport.js";

export interface ProcessSpec {
  /** Executable; no shell unless it is one (`cmd: "/bin/sh", args: ["-c", line]`). */
  cmd: string;
  args?: readonly string[] | undefined;
  /** User to run as (must exist in the sandbox). @default DEFAULT_USER */
  user?: string | undefined;
  cwd?: string | undefined;
  envs?: Record<string, string> | undefined;
  /** envd tag, to find the process again with `list`. */
  tag?: string | undefined;
  /** Run in a terminal of this size (output then comes as `pty`). */
  pty?: { cols: number; rows: number } | undefined;
  /**
   * Process lifetime: sent as Connect-Timeout-Ms, so envd kills the process when it elapses, and the call fails with
   * `deadline_exceeded`. 0 or undefined: none.
   */
  timeoutMs?: number | undefined;
  /** Stops following the process (envd keeps processes whose client went away). */
  signal?: AbortSignal | undefined;
}

export type OutputStream = "stdout" | "stderr" | "pty";

export type ProcessEvent =
  | { kind: "start"; pid: number }
  | { kind: "data"; stream: OutputStream; data: Uint8Array }
  | { kind: "end"; exitCode: number; status: string; error?: string };

/**
 * Starts a process and yields its start, its output and its end, then finishes. Failures (including a stream that
 * closes without an end event) are thrown as BurrowErrors with the Connect code envd answered.
 */
export async function* streamProcess(target: EnvdTarget, spec: ProcessSpec): AsyncGenerator<ProcessEvent, void> {
  const stream = processClient(target).start(
    {
      process: { cmd: spec.cmd, args: [...(spec.args ?? [])], envs: spec.envs ?? {}, ...(spec.cwd ? { cwd: spec.cwd } : {}) },
      ...(spec.pty ? { pty: { size: { cols: spec.pty.cols, rows: spec.pty.rows } } } : {}),
      ...(spec.tag ? { tag: spec.tag } : {}),
      stdin: false,
    },
    {
      headers: rpcHeaders(target, spec.user),
      ...(spec.signal ? { signal: spec.signal } : {}),
      ...(spec.timeoutMs ? { timeoutMs: spec.timeoutMs } : {}),
    },
  );
  try {
    for await (const response of stream) {
      const event = response.event?.event;
      if (event?.case === "start") {
        yield { kind: "start", pid: event.value.pid };
      } else if (event?.case === "data") {
        const output = event.value.output;
        if ((output.case === "stdout" || output.case === "stderr" || output.case === "pty") && output.value.length > 0) {
          yield { kind: "data", stream: output.case, data: output.value };
        }
      } else if (event?.case === "end") {
        const { exitCode, status, error } = event.value;
        yield { kind: "end", exitCode, status, ...(error ? { error } : {}) };
        return;
      }
    }
  } catch (error) {
    throw envdErrorFrom(error, "envd could not run the process");
  }
  throw new BurrowError(Code.Unavailable, "envd closed the process stream without an end event");
}
