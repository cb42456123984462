// The header a node adds to what it forwards to another node. The receiving node answers such a request itself and
// never forwards it again, so two nodes that disagree about an owner for a moment cannot bounce a request between
// them. Honoured from a client it would pin a create to the node it reached (no placement) and keep a request for
// another node's sandbox on the wrong node, so it is signed: an HMAC with a key every node derives from the cluster's
// secret (forward-secret.ts) over the method, the path (without its query), the forwarding node's name and the time.
// A request whose header is not signed so is a client's: both headers are removed before anything reads them. A
// verified signature is removed too (it is never passed into a sandbox nor logged); it can be replayed only for the
// same method and path within the window, and only by whoever sees traffic between nodes.
import { createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";

export const FORWARDED_HEADER = "x-burrow-forwarded-by";
/** `<unix ms>.<hex hmac>`. */
export const FORWARD_SIGNATURE_HEADER = "x-burrow-forward-signature";

/** How far a signature's time may be from the receiver's clock, either way (nodes' clocks differ a little). */
export const SIGNATURE_WINDOW_MS = 120_000;

export function isForwarded(headers: { [name: string]: unknown }): boolean {
  return headers[FORWARDED_HEADER] !== undefined;
}

export class ForwardSigning {
  readonly #key: Buffer;

  /** `key`: derived from the cluster's secret (forward-secret.ts), the same on every node. */
  constructor(
    key: Buffer,
    readonly nodeName: string,
  ) {
    this.#key = key;
  }

  /** The headers that mark a request this node sends to another one. */
  headers(method: string, url: string, now = Date.now()): Record<string, string> {
    return { [FORWARDED_HEADER]: this.nodeName, [FORWARD_SIGNATURE_HEADER]: `${now}.${this.#mac(method, url, this.nodeName, now)}` };
  }

  /** Mark a request passed on as it is (the proxy sends rawHeaders, an upgrade the headers object). */
  mark(req: IncomingMessage): void {
    stripForwarding(req);
    for (const [name, value] of Object.entries(this.headers(req.method ?? "GET", req.url ?? "/"))) {
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

  verify(method: string, url: string, by: string, signature: string, now = Date.now()): boolean {
    const dot = signature.indexOf(".");
    if (dot <= 0) return false;
    const at = Number(signature.slice(0, dot));
    if (!Number.isSafeInteger(at) || Math.abs(now - at) > SIGNATURE_WINDOW_MS) return false;
    const given = Buffer.from(signature.slice(dot + 1), "hex");
    const expected = Buffer.from(this.#mac(method, url, by, at), "hex");
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  #mac(method: string, url: string, by: string, at: number): string {
    const path = url.split("?", 1)[0]!;
    return createHmac("sha256", this.#key).update(`${method.toUpperCase()}\n${path}\n${by}\n${at}`).digest("hex");
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
