// Sandboxes each node made, less those that ended, since its last record: a node's record is up to a heartbeat old,
// and a placement that read only records would send every create of a burst to the node that looked emptiest (or to
// a warm sandbox another node's create already took), and keep avoiding a node whose sandboxes were just killed.
// Every create writes an owner record before it answers and every end removes it; every heartbeat writes the node's
// record. All are messages on the buckets' subjects, which this plain NATS subscription sees as they are published
// (before JetStream acknowledges them). Messages of one node arrive in the order it wrote them, so a count reset by
// each of its records is the change its record does not show yet. A removal names only the sandbox: it is counted
// for the node whose write of that sandbox this subscription saw.
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { NODES_BUCKET, OWNERS_BUCKET } from "./cluster-kv.js";

export class RecentCreates {
  readonly #since = new Map<string, number>();
  /** The node of each sandbox whose owner record was seen written (forgotten when it is removed). */
  readonly #nodeOf = new Map<string, string>();
  readonly #subs: Subscription[];

  private constructor(nc: NatsConnection, logger: Logger) {
    const owners = `$KV.${OWNERS_BUCKET}.`;
    const nodes = `$KV.${NODES_BUCKET}.`;
    this.#subs = [
      nc.subscribe(`${owners}>`, {
        callback: (err, msg) => {
          if (err) return logger.warn({ err }, "the owners subscription ended");
          const sandboxId = msg.subject.slice(owners.length);
          // Removals (ended sandboxes) carry an operation header and no record.
          if (msg.headers?.get("KV-Operation")) {
            const node = this.#nodeOf.get(sandboxId);
            this.#nodeOf.delete(sandboxId);
            if (node !== undefined) this.#add(node, -1);
            return;
          }
          try {
            const record = msg.json<{ node?: unknown; lostAt?: unknown }>();
            // A record marked lost is another node's report, not a create; a rewrite of a known one is no new sandbox.
            if (typeof record.node !== "string" || record.lostAt !== undefined || this.#nodeOf.get(sandboxId) === record.node) return;
            this.#nodeOf.set(sandboxId, record.node);
            this.#add(record.node, 1);
          } catch {
            // Not a record: nothing was created.
          }
        },
      }),
      nc.subscribe(`${nodes}>`, {
        callback: (err, msg) => {
          if (!err) this.#since.delete(msg.subject.slice(nodes.length));
        },
      }),
    ];
  }

  static open(nc: NatsConnection, logger: Logger): RecentCreates {
    return new RecentCreates(nc, logger);
  }

  #add(node: string, delta: number): void {
    this.#since.set(node, (this.#since.get(node) ?? 0) + delta);
  }

  /** Sandboxes `node` made less those that ended there since its record was last written (negative: more ended). */
  since(node: string): number {
    return this.#since.get(node) ?? 0;
  }

  close(): void {
    for (const sub of this.#subs) sub.unsubscribe();
  }
}
