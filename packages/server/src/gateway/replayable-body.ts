// A client's request body on its way to a sandbox, forwarded chunk by chunk as it arrives (with backpressure, like
// pipe()), and kept in memory while it is small, so that the request can be sent again on a fresh connection when
// the first one breaks before the sandbox answers. Connect calls (unary and server-stream requests) are a few
// hundred bytes; uploads larger than the limit are forwarded the same way but never replayed.
import type { IncomingMessage } from "node:http";
import type { Writable } from "node:stream";

/** Request bodies up to this size are kept for a retry. */
export const MAX_REPLAY_BYTES = 64 * 1024;

export class ReplayableBody {
  readonly #req: IncomingMessage;
  readonly #maxBytes: number;
  #chunks: Buffer[] = [];
  #bytes = 0;
  #overflowed = false;
  #ended = false;
  #target: Writable | undefined;
  #waitingForDrain: (() => void) | undefined;

  constructor(req: IncomingMessage, maxBytes = MAX_REPLAY_BYTES) {
    this.#req = req;
    this.#maxBytes = maxBytes;
    req.on("data", (chunk: Buffer) => this.#onData(chunk));
    req.on("end", () => {
      this.#ended = true;
      this.#target?.end();
    });
  }

  /** True while every byte received so far is kept: the body can be sent again from the start. */
  get replayable(): boolean {
    return !this.#overflowed;
  }

  /**
   * Send the body to `target`: what was received so far at once, the rest as it arrives, then end it. A previous
   * target stops receiving (it is being torn down). Only meaningful while `replayable` (or for the first target).
   */
  sendTo(target: Writable): void {
    this.#release();
    this.#target = target;
    for (const chunk of this.#chunks) target.write(chunk);
    if (this.#ended) target.end();
  }

  /** The sandbox has answered: no retry will come, so the copy is dropped (the body keeps flowing). */
  forget(): void {
    this.#overflowed = true;
    this.#chunks = [];
  }

  #onData(chunk: Buffer): void {
    if (!this.#overflowed) {
      this.#bytes += chunk.length;
      if (this.#bytes > this.#maxBytes) {
        this.#overflowed = true;
        this.#chunks = [];
      } else {
        this.#chunks.push(chunk);
      }
    }
    const target = this.#target;
    if (!target || target.destroyed) return;
    if (!target.write(chunk)) {
      this.#req.pause();
      const resume = () => {
        this.#waitingForDrain = undefined;
        this.#req.resume();
      };
      this.#waitingForDrain = resume;
      target.once("drain", resume);
    }
  }

  /** Forget the current target; a request paused for it flows again. */
  #release(): void {
    const resume = this.#waitingForDrain;
    if (resume) {
      this.#target?.off("drain", resume);
      resume();
    }
    this.#target = undefined;
  }
}
