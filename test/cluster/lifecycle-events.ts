// Helpers for the cluster suites: a node's sandbox lifecycle events as a key sees them, and waiting for a condition.

/** The `data:` messages of a server-sent event stream (with a key), collected until stopped. */
export class SseMessages<T> {
  readonly seen: T[] = [];
  readonly #controller = new AbortController();
  /** Resolves once the stream is subscribed (it says so with a first chunk before any message). */
  readonly ready: Promise<void>;

  constructor(url: string, apiKey: string, what: string) {
    this.ready = (async () => {
      const res = await fetch(url, { headers: { "X-API-KEY": apiKey }, signal: this.#controller.signal });
      if (!res.ok || !res.body) throw new Error(`${what}: ${res.status} ${await res.text()}`);
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = (await reader.read()).value ?? "";
      void (async () => {
        try {
          for (;;) {
            for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
              const data = buffer.slice(0, end).split("\n").find((line) => line.startsWith("data: "));
              buffer = buffer.slice(end + 2);
              if (data) this.seen.push(JSON.parse(data.slice(6)) as T);
            }
            const next = await reader.read();
            if (next.done) return;
            buffer += next.value;
          }
        } catch {
          // Stopped.
        }
      })();
    })();
  }

  stop(): void {
    this.#controller.abort();
  }
}

/** Lifecycle events from a node's GET /burrow/v1/lifecycle-events with a key, collected until stopped. */
export class LifecycleEvents extends SseMessages<{ type: string; sandboxID: string }> {
  constructor(url: string, apiKey: string) {
    super(`${url}/burrow/v1/lifecycle-events`, apiKey, "lifecycle events");
  }

  of(type: string, sandboxId: string): number {
    return this.seen.filter((e) => e.type === type && e.sandboxID === sandboxId).length;
  }
}

/** Polls `check` every 100 ms until it holds; fails naming `what` after `timeoutMs`. */
export async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
