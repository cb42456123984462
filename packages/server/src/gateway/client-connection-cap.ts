// A cap on the connections one client (remote address) holds open at once, so that a single client cannot use up
// the server's file descriptors with idle or half-open connections. Connections over the cap get a 503 and close.
import type { Socket } from "node:net";
import { STATUS_CODES } from "node:http";
import type { Logger } from "pino";

/** One warning per client per interval, with the number refused meanwhile: a flood must not flood the log too. */
const LOG_INTERVAL_MS = 10_000;
/** A refused client that does not read its 503 is dropped after this long. */
const REFUSAL_LINGER_MS = 1_000;

const BODY = JSON.stringify({ code: 503, message: "Too many open connections from this address" });
const REFUSAL =
  `HTTP/1.1 503 ${STATUS_CODES[503]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(BODY)}\r\n` +
  `connection: close\r\n\r\n${BODY}`;

/** `::ffff:127.0.0.1` and `127.0.0.1` are the same client. */
function clientKey(socket: Socket): string {
  const address = socket.remoteAddress ?? "unknown";
  return address.startsWith("::ffff:") ? address.slice(7) : address;
}

export class ClientConnectionCap {
  readonly #max: number;
  readonly #logger: Logger;
  readonly #open = new Map<string, number>();
  readonly #refused = new Map<string, { count: number; loggedAt: number }>();
  readonly #refusedSockets = new WeakSet<Socket>();

  /** `max` 0 admits everything. */
  constructor(max: number, logger: Logger) {
    this.#max = max;
    this.#logger = logger;
  }

  /** Open connections of one client (for tests and diagnostics). */
  openFrom(address: string): number {
    return this.#open.get(address) ?? 0;
  }

  /** True for a socket answered 503 by admit(): requests parsed from it anyway must not be served. */
  isRefused(socket: Socket): boolean {
    return this.#refusedSockets.has(socket);
  }

  /** For the server's 'connection' event: count the socket, or answer 503 and close it when over the cap. */
  admit(socket: Socket): boolean {
    if (this.#max === 0) return true;
    const key = clientKey(socket);
    const open = this.#open.get(key) ?? 0;
    if (open >= this.#max) {
      this.#refuse(socket, key);
      return false;
    }
    this.#open.set(key, open + 1);
    socket.once("close", () => {
      const left = (this.#open.get(key) ?? 1) - 1;
      if (left > 0) this.#open.set(key, left);
      else this.#open.delete(key);
    });
    return true;
  }

  #refuse(socket: Socket, key: string): void {
    this.#refusedSockets.add(socket);
    socket.on("error", () => socket.destroy());
    // Answering before the request arrives is valid HTTP/1.1; the client reads it as the answer to its request.
    socket.end(REFUSAL);
    setTimeout(() => socket.destroy(), REFUSAL_LINGER_MS).unref();
    const now = Date.now();
    if (this.#refused.size > 1024) this.#forgetQuietClients(now);
    const refused = this.#refused.get(key) ?? { count: 0, loggedAt: 0 };
    refused.count++;
    if (now - refused.loggedAt >= LOG_INTERVAL_MS) {
      this.#logger.warn(
        { client: key, max: this.#max, refused: refused.count },
        "refused connections over the per-client cap (maxConnectionsPerClient)",
      );
      refused.count = 0;
      refused.loggedAt = now;
    }
    this.#refused.set(key, refused);
  }

  #forgetQuietClients(now: number): void {
    for (const [key, refused] of this.#refused) {
      if (now - refused.loggedAt >= LOG_INTERVAL_MS) this.#refused.delete(key);
    }
  }
}
