// Creates each node made since its last record: a node's record is up to a heartbeat old, and a placement that read
// only records would send every create of a burst to the node that looked emptiest (or to a warm sandbox another
// node's create already took). Every create writes an owner record before it answers, and every heartbeat writes
// the node's record; both are messages on the buckets' subjects, which this plain NATS subscription sees as they are
// published (before JetStream acknowledges them). Messages of one node arrive in the order it wrote them, so a count
// reset by each of its records is the number of sandboxes it made that its record does not show yet.
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { NODES_BUCKET, OWNERS_BUCKET } from "./cluster-kv.js";

export class RecentCreates {
  readonly #since = new Map<string, number>();
  readonly #subs: Subscription[];

  private constructor(nc: NatsConnection, logger: Logger) {
    const owners = `$KV.${OWNERS_BUCKET}.`;
    const nodes = `$KV.${NODES_BUCKET}.`;
    this.#subs = [
      nc.subscribe(`${owners}>`, {
        callback: (err, msg) => {
          if (err) return logger.warn({ err }, "the owners subscription ended");
          // Removals (killed sandboxes) carry an operation header; only writes are creates.
          if (msg.headers?.get("KV-Operation")) return;
          try {
            const record = msg.json<{ node?: unknown; lostAt?: unknown }>();
            // A record marked lost is another node's report, not a create.
            if (typeof record.node === "string" && record.lostAt === undefined) this.#since.set(record.node, (this.#since.get(record.node) ?? 0) + 1);
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

  /** Sandboxes `node` made since its record was last written. */
  since(node: string): number {
    return this.#since.get(node) ?? 0;
  }

  close(): void {
    for (const sub of this.#subs) sub.unsubscribe();
  }
}
