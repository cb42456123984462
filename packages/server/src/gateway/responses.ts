// Answers the gateway itself gives, in the shapes the SDK expects.
import type { ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { STATUS_CODES } from "node:http";

/** E2B's proxy answer for a killed, paused or unknown sandbox; the SDK's isRunning() is false only on 502. */
export function goneBody(sandboxId: string, paused = false): string {
  return JSON.stringify({ sandboxId, message: paused ? "The sandbox is paused" : "The sandbox was not found", code: 502 });
}

/** The sandbox answered, but not with a usable HTTP response (bad status line, header, framing…). */
export function invalidResponseBody(sandboxId: string, port: number): string {
  return JSON.stringify({
    sandboxId,
    message: `The sandbox ${sandboxId} answered on port ${port} with an invalid HTTP response`,
    port,
    code: 502,
  });
}

/** The gateway itself failed while proxying; the details are in the server's log. */
export function proxyFailedBody(sandboxId: string, port: number): string {
  return JSON.stringify({ sandboxId, message: `The gateway failed while proxying to port ${port} of sandbox ${sandboxId}`, port, code: 502 });
}

export function sendJson(res: ServerResponse, status: number, body: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

/** Write a complete HTTP/1.1 response on a raw socket (upgrade requests have no ServerResponse) and close it. */
export function sendRawJson(socket: Duplex, status: number, body: string): void {
  if (socket.destroyed) return;
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}\r\n` +
      `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}
