// Waiting for a starting envd: /health is polled until it answers 2xx.
import { BurrowError, Code } from "@burrow/protocol";
import type { EnvdTarget } from "./envd-target.js";
import { httpCall } from "./http-call.js";

/**
 * Pause between attempts. A refused connect into the sandbox's namespace costs well under a millisecond, so poll
 * often: every millisecond of delay here is a millisecond added to sandbox creation.
 */
const POLL_INTERVAL_MS = 3;
/**
 * A short per-attempt timeout: a SYN lost while the veth settles would otherwise wait for the kernel's one-second
 * retransmission; a fresh connection attempt is cheaper.
 */
const ATTEMPT_TIMEOUT_MS = 100;

/** Connection refusals are expected while envd starts; throws `deadline_exceeded` when `timeoutMs` passes first. */
export async function waitForEnvd(target: EnvdTarget, opts: { timeoutMs: number; signal?: AbortSignal | undefined }): Promise<void> {
  const { signal } = opts;
  const deadline = Date.now() + opts.timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    signal?.throwIfAborted();
    try {
      const res = await httpCall(target, "GET", "/health", { signal, timeoutMs: ATTEMPT_TIMEOUT_MS });
      if (res.status >= 200 && res.status < 300) return;
      lastError = new Error(`status ${res.status}`);
    } catch (error) {
      if (signal?.aborted) throw error;
      lastError = error;
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
  }
  throw new BurrowError(Code.DeadlineExceeded, `envd did not become ready within ${opts.timeoutMs} ms`, { cause: lastError });
}
