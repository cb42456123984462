// Hop-by-hop headers (RFC 9110 §7.6.1) describe one connection and must not be forwarded by a proxy.
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from "node:http";

const HOP_BY_HOP = new Set([
  "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te", "trailer", "upgrade",
]);

/**
 * Copy end-to-end headers. `transfer-encoding` is kept on purpose: Node re-frames a body it is told is chunked,
 * which keeps streamed bodies streamed in both directions.
 */
export function endToEndHeaders(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const listed = new Set(
    String(headers.connection ?? "")
      .split(",")
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean),
  );
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || listed.has(name)) continue;
    out[name] = value;
  }
  return out;
}

/**
 * End-to-end headers as raw [name, value, …] pairs, with the names as the peer wrote them (Node's `headers` object
 * lower-cases them, which some servers in sandboxes care about). `host` replaces the Host header's value.
 */
export function endToEndRawHeaders(rawHeaders: readonly string[], opts: { host?: string | undefined } = {}): string[] {
  const listed = new Set<string>();
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if (rawHeaders[i]!.toLowerCase() !== "connection") continue;
    for (const h of rawHeaders[i + 1]!.split(",")) if (h.trim()) listed.add(h.trim().toLowerCase());
  }
  const out: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || listed.has(lower)) continue;
    out.push(name, lower === "host" && opts.host !== undefined ? opts.host : rawHeaders[i + 1]!);
  }
  return out;
}

/** Serialise a response head for a raw socket, keeping the upstream's header names and order. */
export function rawResponseHead(statusCode: number, statusMessage: string, rawHeaders: string[]): string {
  let head = `HTTP/1.1 ${statusCode} ${statusMessage}\r\n`;
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) head += `${rawHeaders[i]}: ${rawHeaders[i + 1]}\r\n`;
  return `${head}\r\n`;
}
