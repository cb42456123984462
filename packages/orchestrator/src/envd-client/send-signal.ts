// Signals to processes in a sandbox by pid.
import { processPb } from "@burrow/protocol";
import { envdErrorFrom } from "./envd-error.js";
import type { EnvdTarget } from "./envd-target.js";
import { processClient, rpcHeaders } from "./transport.js";

const SIGNAL_TIMEOUT_MS = 5000;

export async function sendSignal(
  target: EnvdTarget,
  pid: number,
  signal: "SIGKILL" | "SIGTERM",
  opts: { user?: string | undefined; signal?: AbortSignal | undefined } = {},
): Promise<void> {
  try {
    await processClient(target).sendSignal(
      { process: { selector: { case: "pid", value: pid } }, signal: processPb.Signal[signal] },
      { headers: rpcHeaders(target, opts.user), timeoutMs: SIGNAL_TIMEOUT_MS, ...(opts.signal ? { signal: opts.signal } : {}) },
    );
  } catch (error) {
    throw envdErrorFrom(error, `envd could not signal process ${pid}`);
  }
}
