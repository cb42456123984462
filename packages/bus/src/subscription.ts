import type { AsyncQueue } from "./async-queue.js";
import type { BusMsg, Subscription } from "./types.js";

/**
 * The Subscription both backends hand out: reads come from `sink`; close (or aborting `signal`) detaches the
 * backend's listener with `detach` and ends the iteration.
 */
export function queueSubscription(
  pattern: string,
  sink: AsyncQueue<BusMsg>,
  detach: () => void,
  signal: AbortSignal | undefined,
): Subscription {
  const close = () => {
    detach();
    sink.end();
    return Promise.resolve();
  };
  signal?.addEventListener("abort", () => void close(), { once: true });
  return {
    pattern,
    get dropped() {
      return sink.dropped;
    },
    close,
    [Symbol.asyncIterator]: () => sink[Symbol.asyncIterator](),
  };
}
