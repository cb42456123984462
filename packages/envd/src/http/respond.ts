import type { ServerResponse } from "node:http";

/** Every envd error body: `{"code": <http status>, "message": "…"}`. */
export function sendError(res: ServerResponse, status: number, message: string): void {
  sendJson(res, status, { code: status, message });
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const data = Buffer.from(JSON.stringify(body));
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": data.length });
  res.end(data);
}

export function sendEmpty(res: ServerResponse, status: number): void {
  // empty non-204 bodies carry an explicit length so clients do not try to parse a chunked nothing
  res.writeHead(status, status === 204 ? {} : { "Content-Length": 0 });
  res.end();
}
