// The destination a client names in its first bytes, read without terminating anything: the server_name of a TLS
// ClientHello (RFC 8446 §4.1.2, RFC 6066 §3), which may span several TLS records and TCP segments, and the Host
// header of an HTTP/1.x request. Each reader answers "more" until it has enough, and never looks further than the
// first message; the bytes are forwarded unchanged afterwards.

export type Peek = { state: "more" } | { state: "done"; host: string | undefined } | { state: "invalid"; reason: string };

/** The most a client may send before the name is known (a ClientHello with large key shares fits easily). */
export const MAX_PEEK_BYTES = 64 * 1024;

const MORE: Peek = { state: "more" };

export function peekTlsServerName(data: Buffer): Peek {
  // Handshake bytes gathered from consecutive handshake records.
  const parts: Buffer[] = [];
  let offset = 0;
  let handshakeLength: number | undefined;
  let gathered = 0;
  for (;;) {
    if (data.length < offset + 5) return MORE;
    if (data[offset] !== 22) return { state: "invalid", reason: "not a TLS handshake" };
    const recordLength = data.readUInt16BE(offset + 3);
    if (data.length < offset + 5 + recordLength) return MORE;
    const fragment = data.subarray(offset + 5, offset + 5 + recordLength);
    parts.push(fragment);
    gathered += fragment.length;
    offset += 5 + recordLength;
    if (handshakeLength === undefined && gathered >= 4) {
      const head = Buffer.concat(parts);
      if (head[0] !== 1) return { state: "invalid", reason: "the first handshake message is not a ClientHello" };
      handshakeLength = head.readUIntBE(1, 3);
    }
    if (handshakeLength !== undefined && gathered >= 4 + handshakeLength) break;
  }
  try {
    return { state: "done", host: serverNameOf(Buffer.concat(parts).subarray(4, 4 + handshakeLength)) };
  } catch {
    return { state: "invalid", reason: "malformed ClientHello" };
  }
}

/** server_name of a ClientHello body; undefined when it has none (clients send none for IP literals). */
function serverNameOf(hello: Buffer): string | undefined {
  const r = new Reader(hello);
  r.skip(2 + 32); // legacy_version, random
  r.skip(r.u8()); // legacy_session_id
  r.skip(r.u16()); // cipher_suites
  r.skip(r.u8()); // legacy_compression_methods
  if (r.done()) return undefined;
  const extensionsEnd = r.pos + r.u16();
  while (r.pos + 4 <= extensionsEnd) {
    const type = r.u16();
    const length = r.u16();
    if (type !== 0) {
      r.skip(length);
      continue;
    }
    const listEnd = r.pos + r.u16();
    while (r.pos + 3 <= listEnd) {
      const nameType = r.u8();
      const name = r.bytes(r.u16());
      if (nameType === 0) return name.toString("ascii").toLowerCase();
    }
    return undefined;
  }
  return undefined;
}

class Reader {
  pos = 0;
  constructor(private readonly buf: Buffer) {}
  u8(): number {
    this.need(1);
    return this.buf[this.pos++]!;
  }
  u16(): number {
    this.need(2);
    const v = this.buf.readUInt16BE(this.pos);
    this.pos += 2;
    return v;
  }
  bytes(n: number): Buffer {
    this.need(n);
    const b = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return b;
  }
  skip(n: number): void {
    this.need(n);
    this.pos += n;
  }
  done(): boolean {
    return this.pos >= this.buf.length;
  }
  private need(n: number): void {
    if (this.pos + n > this.buf.length) throw new RangeError("truncated");
  }
}

const HEADER_END = Buffer.from("\r\n\r\n");

/** The Host of an HTTP/1.x request (without its port), once its header block is complete. */
export function peekHttpHost(data: Buffer): Peek {
  const end = data.indexOf(HEADER_END);
  if (end < 0) return data.length > 16 * 1024 ? { state: "invalid", reason: "request head too long" } : MORE;
  const lines = data.subarray(0, end).toString("latin1").split("\r\n");
  if (!/^[A-Z]+ \S+ HTTP\/1\.[01]$/.test(lines[0] ?? "")) return { state: "invalid", reason: "not an HTTP/1 request" };
  const hosts = lines.slice(1).filter((l) => /^host:/i.test(l));
  // Two Host headers are a classic way to make a proxy and a server disagree.
  if (hosts.length !== 1) return { state: "invalid", reason: hosts.length === 0 ? "no Host header" : "more than one Host header" };
  const value = hosts[0]!.slice(5).trim().toLowerCase();
  const host = value.startsWith("[") ? value.slice(0, value.indexOf("]") + 1) : value.replace(/:\d+$/, "");
  if (!/^[a-z0-9.\-_[\]:]+$/.test(host)) return { state: "invalid", reason: "malformed Host header" };
  return { state: "done", host };
}
