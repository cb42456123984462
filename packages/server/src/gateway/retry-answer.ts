// The gateway's answer when a running sandbox could not be reached in time: "try again", in the shape the client
// reads, so that the official SDK reports something true. A 502 is what E2B's proxy sends for a sandbox that is gone,
// and the SDK turns every 502 into "not running" (SandboxNotFoundError, TimeoutError) whatever the body says; a 503
// on a Connect call becomes code `unavailable`, which the SDK reports the same way. So:
//   - Connect server-stream calls (commands.run, pty, watch) get 200 with an end-of-stream error
//     `resource_exhausted` (the status of a streaming answer carries no error in Connect; the SDK's RateLimitError,
//     "please try again later", with the gateway's message in front);
//   - Connect unary calls (files.list, commands.list…) get 503 + Retry-After with a Connect error body
//     `resource_exhausted` (same error in the SDK);
//   - everything else (/files, /health, user ports) gets 503 + Retry-After with E2B's JSON error shape (the SDK's
//     SandboxError "503: <message>"; isRunning() throws it instead of answering false).
import type { IncomingHttpHeaders } from "node:http";

/** Seconds a client is asked to wait before trying again. */
export const RETRY_AFTER_S = 1;

export interface GatewayAnswer {
  status: number;
  headers: Record<string, string | number>;
  body: Buffer;
}

function header(headers: IncomingHttpHeaders, name: string): string {
  const value = headers[name];
  return (Array.isArray(value) ? value[0] : value)?.trim().toLowerCase() ?? "";
}

function connectError(message: string): Record<string, unknown> {
  return { code: "resource_exhausted", message };
}

export function retryAnswer(requestHeaders: IncomingHttpHeaders, sandboxId: string, port: number, message: string): GatewayAnswer {
  const contentType = header(requestHeaders, "content-type");
  if (contentType.startsWith("application/connect+")) {
    // End-of-stream envelope: flags 0x02, big-endian length, JSON (JSON whatever the stream's codec).
    const json = Buffer.from(JSON.stringify({ error: connectError(message) }));
    const envelope = Buffer.alloc(5 + json.length);
    envelope.writeUInt8(0x02, 0);
    envelope.writeUInt32BE(json.length, 1);
    json.copy(envelope, 5);
    return { status: 200, headers: { "content-type": contentType.split(";")[0]!, "content-length": envelope.length }, body: envelope };
  }
  const retryAfter = { "retry-after": RETRY_AFTER_S };
  if (header(requestHeaders, "connect-protocol-version") !== "") {
    const body = Buffer.from(JSON.stringify(connectError(message)));
    return { status: 503, headers: { ...retryAfter, "content-type": "application/json", "content-length": body.length }, body };
  }
  const body = Buffer.from(JSON.stringify({ sandboxId, message, port, code: 503 }));
  return { status: 503, headers: { ...retryAfter, "content-type": "application/json", "content-length": body.length }, body };
}
