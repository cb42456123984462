// Open requests per API key, so that revoking a key ends what it has open (server-sent event streams of the bus,
// long polls, uploads) instead of only refusing its next request.
import type { IncomingMessage, ServerResponse } from "node:http";

export class KeyStreams {
  readonly #open = new Map<number, Set<ServerResponse>>();

  /** Track a request's response until it closes. */
  track(keyId: number, req: IncomingMessage, res: ServerResponse): void {
    let set = this.#open.get(keyId);
    if (!set) this.#open.set(keyId, (set = new Set()));
    set.add(res);
    const done = () => {
      set.delete(res);
      if (set.size === 0 && this.#open.get(keyId) === set) this.#open.delete(keyId);
    };
    res.once("close", done);
    req.once("close", () => {
      if (res.writableFinished) done();
    });
  }

  /** End every open request of a key (their sockets are destroyed: a stream just ends). Returns how many. */
  endAll(keyId: number, except?: ServerResponse): number {
    const set = this.#open.get(keyId);
    if (!set) return 0;
    let ended = 0;
    for (const res of [...set]) {
      if (res === except) continue;
      set.delete(res);
      res.destroy();
      ended++;
    }
    return ended;
  }
}
