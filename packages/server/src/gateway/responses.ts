// Answers the gateway itself gives, in the shapes the SDK expects.
import type { ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { STATUS_CODES } from "node:http";
import type { GatewayAnswer } from "./retry-answer.js";

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

/** The sandbox accepted the connection and closed it (or reset it) without answering. */
export function closedBody(sandboxId: string, port: number): string {
  return JSON.stringify({ sandboxId, message: `The sandbox ${sandboxId} closed the connection on port ${port} without answering`, port, code: 502 });
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

export function jsonAnswer(status: number, body: string): GatewayAnswer {
  const bytes = Buffer.from(body);
  return { status, headers: { "content-type": "application/json", "content-length": bytes.length }, body: bytes };
}

export function sendAnswer(res: ServerResponse, answer: GatewayAnswer): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(answer.status, answer.headers);
  res.end(answer.body);
}

/** Write a complete HTTP/1.1 response on a raw socket (upgrade requests have no ServerResponse) and close it. */
export function sendRawJson(socket: Duplex, status: number, body: string): void {
  sendRawAnswer(socket, jsonAnswer(status, body));
}

export function sendRawAnswer(socket: Duplex, answer: GatewayAnswer): void {
  if (socket.destroyed) return;
  let head = `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? ""}\r\n`;
  for (const [name, value] of Object.entries(answer.headers)) head += `${name}: ${value}\r\n`;
  socket.end(Buffer.concat([Buffer.from(`${head}connection: close\r\n\r\n`, "latin1"), answer.body]));
}
