// Run a process to completion: output goes to a callback as it comes, the exit status is the result.
import { BurrowError, Code } from "@burrow/protocol";
import type { EnvdTarget } from "./envd-target.js";
import { streamProcess, type OutputStream, type ProcessSpec } from "./process-stream.js";

export interface ProcessResult {
  pid: number;
  exitCode: number;
  /** envd's status text, e.g. "exit status 1" or "signal: killed". */
  status: string;
  error?: string | undefined;
}

/** Resolves with the exit status (a non-zero exit is a result, not an error); throws a BurrowError when it cannot run. */
export async function runProcess(
  target: EnvdTarget,
  spec: ProcessSpec,
  onOutput?: (stream: OutputStream, data: Uint8Array) => void,
): Promise<ProcessResult> {
  let pid = 0;
  for await (const event of streamProcess(target, spec)) {
    if (event.kind === "start") pid = event.pid;
    else if (event.kind === "data") onOutput?.(event.stream, event.data);
    else return { pid, exitCode: event.exitCode, status: event.status, error: event.error };
  }
  // streamProcess throws rather than finish without an end event; this is for the type checker.
  throw new BurrowError(Code.Internal, "process stream finished without an end event");
}
