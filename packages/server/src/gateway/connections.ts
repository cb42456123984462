// Per-sandbox bookkeeping of the gateway: a keep-alive agent to each sandbox, and the in-flight sockets so that
// killing a sandbox drops its connections at once (the SDK then sees the stream terminate and /health say 502).
import { Agent } from "node:http";

interface Destroyable {
  destroy(): unknown;
}

export class SandboxConnections {
  readonly #agents = new Map<string, Agent>();
  readonly #inflight = new Map<string, Set<Destroyable>>();

  agent(sandboxId: string): Agent {
    let agent = this.#agents.get(sandboxId);
    if (!agent) {
      // noDelay: Connect stream envelopes are small and must not wait for Nagle.
      agent = new Agent({ keepAlive: true, maxFreeSockets: 16, timeout: 60_000, noDelay: true });
      this.#agents.set(sandboxId, agent);
    }
    return agent;
  }

  /** Track sockets of one exchange; returns the function that forgets them when the exchange ends. */
  track(sandboxId: string, ...items: Destroyable[]): () => void {
    let set = this.#inflight.get(sandboxId);
    if (!set) {
      set = new Set();
      this.#inflight.set(sandboxId, set);
    }
    for (const item of items) set.add(item);
    return () => {
      const current = this.#inflight.get(sandboxId);
      if (!current) return;
      for (const item of items) current.delete(item);
      if (current.size === 0) this.#inflight.delete(sandboxId);
    };
  }

  inflight(sandboxId: string): number {
    return this.#inflight.get(sandboxId)?.size ?? 0;
  }

  /** Destroy every in-flight socket of a sandbox and its agent. */
  drop(sandboxId: string): void {
    const set = this.#inflight.get(sandboxId);
    this.#inflight.delete(sandboxId);
    for (const item of set ?? []) item.destroy();
    this.#agents.get(sandboxId)?.destroy();
    this.#agents.delete(sandboxId);
  }

  /** Idempotent. */
  close(): void {
    for (const id of [...this.#inflight.keys(), ...this.#agents.keys()]) this.drop(id);
  }
}
