// The orchestrator's two calls to envd in a new sandbox: wait until it answers, then /init it.
import { request } from "node:http";
import { ENVD_PORT } from "@burrow/protocol";
import { OrchestratorError } from "./errors.js";

interface HttpResult {
  status: number;
  body: string;
}

function httpCall(
  address: string,
  method: string,
  path: string,
  opts: { headers?: Record<string, string>; body?: string; signal?: AbortSignal; timeoutMs: number },
): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: address,
        port: ENVD_PORT,
        method,
        path,
        headers: { ...opts.headers, ...(opts.body ? { "content-length": Buffer.byteLength(opts.body) } : {}) },
        signal: opts.signal,
        timeout: opts.timeoutMs,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    req.end(opts.body);
  });
}

const ENVD_POLL_INTERVAL_MS = 3;
const HEALTH_ATTEMPT_TIMEOUT_MS = 100;

/** Poll envd's /health until it answers 2xx. Connection refusals are expected while node starts. */
export async function waitForEnvd(address: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    signal?.throwIfAborted();
    try {
      // A short per-attempt timeout: a SYN lost while the veth settles would otherwise wait for the kernel's
      // one-second retransmission; a fresh connection attempt is cheaper.
      const res = await httpCall(address, "GET", "/health", { signal, timeoutMs: HEALTH_ATTEMPT_TIMEOUT_MS });
      if (res.status >= 200 && res.status < 300) return;
      lastError = new Error(`status ${res.status}`);
    } catch (error) {
      if (signal?.aborted) throw error;
      lastError = error;
    }
    // A refused connect into the sandbox's namespace costs well under a millisecond, so poll often: every
    // millisecond of delay here is a millisecond added to sandbox creation.
    await new Promise((resolve) => setTimeout(resolve, ENVD_POLL_INTERVAL_MS));
  }
  throw new OrchestratorError("deadline_exceeded", `envd did not become ready within ${timeoutMs} ms`, {
    cause: lastError,
  });
}

export interface EnvdInit {
  envVars: Record<string, string>;
  accessToken: string;
  defaultUser: string;
  defaultWorkdir?: string;
}

export async function initEnvd(address: string, initToken: string, init: EnvdInit, signal?: AbortSignal): Promise<void> {
  const res = await httpCall(address, "POST", "/init", {
    headers: { "content-type": "application/json", "x-access-token": initToken },
    body: JSON.stringify({ ...init, timestamp: new Date().toISOString() }),
    signal,
    timeoutMs: 5000,
  });
  if (res.status < 200 || res.status >= 300) {
    throw new OrchestratorError("internal", `envd /init answered ${res.status}: ${res.body}`);
  }
}
