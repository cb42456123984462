// A long-running process (a template's start command): started, then followed in the background with its last
// output kept for error messages.
import { BurrowError, Code } from "@burrow/protocol";
import type { EnvdTarget } from "./envd-target.js";
import { streamProcess, type ProcessSpec } from "./process-stream.js";
import type { ProcessResult } from "./run-process.js";

export interface BackgroundProcess {
  pid: number;
  /** Resolves when the process ends or the stream breaks; never rejects. */
  readonly ended: Promise<Omit<ProcessResult, "pid"> | Error>;
  /** The last output (all streams interleaved), at most `outputLimitBytes` characters. */
  output(): string;
  /** Stop following the output (the process keeps running in the sandbox). */
  detach(): void;
}

/** Resolves once envd reports the pid; throws a BurrowError when the process cannot be started. */
export async function startBackgroundProcess(
  target: EnvdTarget,
  spec: ProcessSpec & { outputLimitBytes?: number },
): Promise<BackgroundProcess> {
  const follow = new AbortController();
  const signal = spec.signal ? AbortSignal.any([spec.signal, follow.signal]) : follow.signal;
  const events = streamProcess(target, { ...spec, signal });
  let pid: number;
  try {
    const first = await events.next();
    if (first.done || first.value.kind !== "start") throw new BurrowError(Code.Internal, "envd did not send a start event");
    pid = first.value.pid;
  } catch (error) {
    follow.abort();
    throw error;
  }
  const limit = spec.outputLimitBytes ?? 16_384;
  const decoder = new TextDecoder();
  let output = "";
  const ended = (async (): Promise<Omit<ProcessResult, "pid"> | Error> => {
    try {
      for await (const event of events) {
        if (event.kind === "data") output = (output + decoder.decode(event.data, { stream: true })).slice(-limit);
        else if (event.kind === "end") return { exitCode: event.exitCode, status: event.status, error: event.error };
      }
      return new Error("process stream ended without an end event");
    } catch (error) {
      return error instanceof Error ? error : new Error(String(error));
    }
  })();
  return { pid, ended, output: () => output, detach: () => follow.abort() };
}
