// What went out, per sandbox: every connection the egress proxy carried or refused and every name the resolver
// refused. Kept in memory, the newest MAX_PER_SANDBOX per sandbox, for as long as the sandbox lives in this process
// (bounded, cheap, and lost at a restart: the bus carries the durable record), and handed to listeners as it happens.

export interface EgressRecord {
  sandboxId: string;
  /** Unix ms when the connection ended (or was refused). */
  atMs: number;
  /**
   * `proxy` for TCP through the egress proxy, `direct` for TCP the kernel forwarded after the judge read its name
   * (direct-path.ts; its bytes are the kernel's per-connection counters, headers included), `dns` for a name the
   * resolver refused.
   */
  via: "proxy" | "direct" | "dns";
  verdict: "allowed" | "denied";
  /** The entry that decided (`*.example.com`, `203.0.113.0/24`, `ALL_TRAFFIC`, `internet`, `no rules`), or why. */
  rule: string;
  /** The name the client asked for (SNI, Host, DNS question), when it named one. */
  host?: string;
  /** The address connected to (allowed) or that the name pointed at (denied by address). */
  ip?: string;
  /** The port the sandbox connected to. */
  port?: number;
  /** Bytes from the sandbox to the destination and back (allowed connections). */
  bytesOut: number;
  bytesIn: number;
}

export const MAX_PER_SANDBOX = 1000;

export type EgressListener = (record: EgressRecord) => void;

export class EgressAudit {
  readonly #records = new Map<string, EgressRecord[]>();
  readonly #listeners = new Set<EgressListener>();

  add(record: EgressRecord): void {
    let list = this.#records.get(record.sandboxId);
    if (!list) this.#records.set(record.sandboxId, (list = []));
    list.push(record);
    if (list.length > MAX_PER_SANDBOX) list.splice(0, list.length - MAX_PER_SANDBOX);
    for (const listener of this.#listeners) {
      try {
        listener(record);
      } catch {
        // A listener's failure is its own; the audit goes on.
      }
    }
  }

  /** The newest `limit` records of a sandbox, oldest first. */
  list(sandboxId: string, limit = 100): EgressRecord[] {
    const list = this.#records.get(sandboxId) ?? [];
    return list.slice(Math.max(0, list.length - limit));
  }

  forget(sandboxId: string): void {
    this.#records.delete(sandboxId);
  }

  subscribe(listener: EgressListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
