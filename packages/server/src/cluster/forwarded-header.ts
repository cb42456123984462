// The header a node adds to what it forwards to another node. The receiving node answers such a request itself and
// never forwards it again, so two nodes that disagree about an owner for a moment cannot bounce a request between
// them. Honoured from a client it would pin a create to the node it reached (no placement) and keep a request for
// another node's sandbox on the wrong node, so it is signed: an HMAC with a key every node derives from the cluster's
// secret (forward-secret.ts) over the method, the path (without its query), the forwarding node's name, the receiving
// node's name, the time and a random nonce. A request whose header is not signed so is a client's: both headers are
// removed before anything reads them. A verified signature is removed too (it is never passed into a sandbox nor
// logged). Whoever sees traffic between nodes cannot replay one: another node computes another HMAC (its own name is
// in it), and the node it was meant for remembers every nonce it accepted until the signature's time leaves the
// window (accepted-nonces.ts), so the same headers a second time are a client's mark.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Logger } from "pino";
import { AcceptedNonces } from "./accepted-nonces.js";

export const FORWARDED_HEADER = "x-burrow-forwarded-by";
/** `<unix ms>.<hex nonce>.<hex hmac>`. */
export const FORWARD_SIGNATURE_HEADER = "x-burrow-forward-signature";

/** How far a signature's time may be from the receiver's clock, either way (nodes' clocks differ a little). */
export const SIGNATURE_WINDOW_MS = 120_000;

export function isForwarded(headers: { [name: string]: unknown }): boolean {
  return headers[FORWARDED_HEADER] !== undefined;
}

/** Random bytes of a signature's nonce: never the same twice in practice. */
const NONCE_BYTES = 16;

export class ForwardSigning {
  readonly #key: Buffer;
  readonly #accepted = new AcceptedNonces();

  /**
   * `key`: derived from the cluster's secret (forward-secret.ts), the same on every node; `logger`: where a replayed
   * signature is reported.
   */
  constructor(
    key: Buffer,
    readonly nodeName: string,
    private readonly logger?: Logger,
  ) {
    this.#key = key;
  }

  /** Nonces remembered now (what bounds them is the window). */
  get acceptedNonces(): number {
    return this.#accepted.size;
  }

  /** The headers that mark a request this node sends to node `to` (valid there once). */
  headers(method: string, url: string, to: string, now = Date.now()): Record<string, string> {
    const nonce = randomBytes(NONCE_BYTES).toString("hex");
    return { [FORWARDED_HEADER]: this.nodeName, [FORWARD_SIGNATURE_HEADER]: `${now}.${nonce}.${this.#mac(method, url, this.nodeName, to, now, nonce)}` };
  }

  /** Mark a request passed on as it is to node `to` (the proxy sends rawHeaders, an upgrade the headers object). */
  mark(req: IncomingMessage, to: string): void {
    stripForwarding(req);
    for (const [name, value] of Object.entries(this.headers(req.method ?? "GET", req.url ?? "/", to))) {
      req.rawHeaders.push(name, value);
      req.headers[name] = value;
    }
  }

  /**
   * Whether the request was forwarded by a node of this cluster. Whatever the answer, the signature is gone from it
   * afterwards, and so is the forwarded mark unless it was verified: nothing after this sees a client's mark.
   */
  admit(req: IncomingMessage, now = Date.now()): boolean {
    const by = single(req.headers[FORWARDED_HEADER]);
    const signature = single(req.headers[FORWARD_SIGNATURE_HEADER]);
    const ok = by !== undefined && signature !== undefined && this.verify(req.method ?? "GET", req.url ?? "/", by, signature, now);
    if (!ok) stripForwarding(req);
    else removeHeader(req, FORWARD_SIGNATURE_HEADER);
    return ok;
  }

  /**
   * Whether `signature` is a valid one of node `by` for this node, not seen before; a valid one is remembered, so it
   * verifies once. A repeat is logged (someone replays what a node sent).
   */
  verify(method: string, url: string, by: string, signature: string, now = Date.now()): boolean {
    const parts = signature.split(".");
    if (parts.length !== 3) return false;
    const [time, nonce, mac] = parts as [string, string, string];
    const at = Number(time);
    if (time === "" || !Number.isSafeInteger(at) || Math.abs(now - at) > SIGNATURE_WINDOW_MS) return false;
    if (!/^[0-9a-f]+$/.test(nonce) || nonce.length !== NONCE_BYTES * 2) return false;
    const given = Buffer.from(mac, "hex");
    const expected = Buffer.from(this.#mac(method, url, by, this.nodeName, at, nonce), "hex");
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return false;
    if (this.#accepted.take(nonce, at + SIGNATURE_WINDOW_MS, now)) return true;
    this.logger?.warn({ by, method, path: url.split("?", 1)[0] }, "a forwarded mark's signature was replayed: the request is treated as a client's");
    return false;
  }

  #mac(method: string, url: string, by: string, to: string, at: number, nonce: string): string {
    const path = url.split("?", 1)[0]!;
    return createHmac("sha256", this.#key).update(`${method.toUpperCase()}\n${path}\n${by}\n${to}\n${at}\n${nonce}`).digest("hex");
  }
}

/** One value of a header (a repeated one is not a node's: nodes send each once). */
function single(value: string | string[] | undefined): string | undefined {
  return typeof value === "string" ? value : undefined;
}

function stripForwarding(req: IncomingMessage): void {
  removeHeader(req, FORWARDED_HEADER);
  removeHeader(req, FORWARD_SIGNATURE_HEADER);
}

/** From both views of the head: the parsed object and rawHeaders (what the proxy passes on). */
function removeHeader(req: IncomingMessage, name: string): void {
  delete req.headers[name];
  for (let i = req.rawHeaders.length - 2; i >= 0; i -= 2) {
    if (req.rawHeaders[i]!.toLowerCase() === name) req.rawHeaders.splice(i, 2);
  }
}
