// Per-sandbox bookkeeping of the gateway: a keep-alive agent to each sandbox, and the in-flight sockets so that
// killing a sandbox drops its connections at once (the SDK then sees the stream terminate and /health say 502).
import { Agent } from "node:http";
import { Agent as HttpsAgent } from "node:https";

/**
 * How long the gateway keeps an idle connection to a sandbox: half of envd's keep-alive timeout (30 s, see
 * packages/envd/src/server.ts), so the gateway always closes first even when its event loop runs seconds late
 * under load; long enough that a client pausing for a few seconds between calls finds the connection still open.
 */
export const IDLE_CONNECTION_MS = 15_000;

interface Destroyable {
  destroy(): unknown;
}

export class SandboxConnections {
  readonly #agents = new Map<string, Agent>();
  /** For the sandbox's httpsPorts: TLS without verifying (E2B's proxy accepts self-signed certificates too). */
  readonly #httpsAgents = new Map<string, HttpsAgent>();
  readonly #inflight = new Map<string, Set<Destroyable>>();

  agent(sandboxId: string): Agent {
    let agent = this.#agents.get(sandboxId);
    if (!agent) {
      // noDelay: Connect stream envelopes are small and must not wait for Nagle. `timeout` is how long an idle
      // connection is kept for the next request (Node takes the shorter of it and the server's Keep-Alive hint less
      // a second); it must end well before envd closes the connection itself, or a request sent just as envd
      // closes it fails (the proxy then retries on a fresh connection, see proxy-http.ts).
      agent = new Agent({ keepAlive: true, maxFreeSockets: 16, timeout: IDLE_CONNECTION_MS, noDelay: true });
      this.#agents.set(sandboxId, agent);
    }
    return agent;
  }

  httpsAgent(sandboxId: string): HttpsAgent {
    let agent = this.#httpsAgents.get(sandboxId);
    if (!agent) {
      agent = new HttpsAgent({ keepAlive: true, maxFreeSockets: 16, timeout: IDLE_CONNECTION_MS, noDelay: true, rejectUnauthorized: false });
      this.#httpsAgents.set(sandboxId, agent);
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
    this.#httpsAgents.get(sandboxId)?.destroy();
    this.#httpsAgents.delete(sandboxId);
  }

  /** Idempotent. */
  close(): void {
    for (const id of [...this.#inflight.keys(), ...this.#agents.keys(), ...this.#httpsAgents.keys()]) this.drop(id);
  }
}
