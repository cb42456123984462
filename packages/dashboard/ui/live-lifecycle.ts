// The team's sandbox lifecycle events, live (GET /burrow/v1/lifecycle-events, read with fetch: EventSource cannot
// send the API key). When the stream fails or the server ends it, it is opened again after a back-off that doubles
// from 0.5 s to 15 s and starts over once a stream has stayed open for a while (one that the server ends at once,
// as while it shuts down, keeps backing off); `onEvent(null)` after a reconnect tells the page to reload, since
// events may have been missed while the stream was down.
import { useEffect, useRef, useState } from "preact/hooks";
import { readSse } from "./sse.js";

export interface LifecycleEvent {
  type: string;
  sandboxID: string;
  templateID: string;
}

export type LiveStatus = "connecting" | "live" | "reconnecting";

const FIRST_DELAY_MS = 500;
const MAX_DELAY_MS = 15_000;
/** A stream open this long counts as healthy: the next drop retries after FIRST_DELAY_MS again. */
const HEALTHY_MS = 5_000;

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
  });
}

/** Calls `onEvent(event)` for each event and `onEvent(null)` after each reconnect; returns the stream's state. */
export function useLifecycleEvents(onEvent: (event: LifecycleEvent | null) => void): { status: LiveStatus; reconnects: number } {
  const [status, setStatus] = useState<LiveStatus>("connecting");
  const [reconnects, setReconnects] = useState(0);
  const handler = useRef(onEvent);
  handler.current = onEvent;
  useEffect(() => {
    const controller = new AbortController();
    const { signal } = controller;
    void (async () => {
      let delay = FIRST_DELAY_MS;
      for (let attempt = 0; !signal.aborted; attempt++) {
        let openedAt: number | undefined;
        try {
          const opened = () => {
            openedAt = Date.now();
            setStatus("live");
            if (attempt > 0) {
              setReconnects((n) => n + 1);
              handler.current(null);
            }
          };
          for await (const event of readSse("/burrow/v1/lifecycle-events", signal, opened)) {
            if (event.event !== "lifecycle") continue;
            try {
              handler.current(JSON.parse(event.data) as LifecycleEvent);
            } catch {
              // a malformed event: the safety-net poll covers it
            }
          }
        } catch {
          // dropped or refused: retried below (a 401 has already signed the page out)
        }
        if (signal.aborted) return;
        if (openedAt !== undefined && Date.now() - openedAt >= HEALTHY_MS) delay = FIRST_DELAY_MS;
        setStatus("reconnecting");
        await sleep(delay, signal);
        delay = Math.min(delay * 2, MAX_DELAY_MS);
      }
    })();
    return () => controller.abort();
  }, []);
  return { status, reconnects };
}
