// One plain HTTP exchange with envd on a fresh connection, for the calls around a sandbox's start (/health, /init):
// no pooled socket can be stale there, and each attempt has a timeout of its own.
import { request } from "node:http";
import type { EnvdTarget } from "./envd-target.js";

export interface HttpResult {
  status: number;
  body: string;
}

export function httpCall(
  target: EnvdTarget,
  method: string,
  path: string,
  opts: { headers?: Record<string, string>; body?: string; signal?: AbortSignal | undefined; timeoutMs: number },
): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.host,
        port: target.port,
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
    req.on("timeout", () => req.destroy(new Error(`no answer within ${opts.timeoutMs} ms`)));
    req.on("error", reject);
    req.end(opts.body);
  });
}
