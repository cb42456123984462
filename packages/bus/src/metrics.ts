import { Counter, Gauge, type Registry } from "prom-client";
import type { ConsumerInfo } from "./types.js";

/** Bus counters. Labels use stream/durable names and reasons, never raw subjects, to bound cardinality. */
export interface BusMetrics {
  published: Counter<"backend" | "mode">;
  delivered: Counter<"backend" | "mode">;
  redelivered: Counter<"backend">;
  deadLettered: Counter<"backend" | "reason">;
  rejected: Counter<"reason">;
  /** Registers a consumer whose lag is sampled on each scrape; returns the unregister function. */
  trackLag(key: string, info: () => Promise<ConsumerInfo>): () => void;
}

export function createBusMetrics(registry: Registry, prefix = "burrow_bus_"): BusMetrics {
  const lagSources = new Map<string, () => Promise<ConsumerInfo>>();
  const registers = [registry];
  const published = new Counter({ name: `${prefix}published_total`, help: "Messages published", labelNames: ["backend", "mode"] as const, registers });
  const delivered = new Counter({ name: `${prefix}delivered_total`, help: "Messages delivered to subscribers and consumers", labelNames: ["backend", "mode"] as const, registers });
  const redelivered = new Counter({ name: `${prefix}redelivered_total`, help: "Durable deliveries after the first", labelNames: ["backend"] as const, registers });
  const deadLettered = new Counter({ name: `${prefix}dead_lettered_total`, help: "Messages moved to the dead-letter stream", labelNames: ["backend", "reason"] as const, registers });
  const rejected = new Counter({ name: `${prefix}rejected_messages_total`, help: "Agent messages rejected on receipt (signature, replay, expiry, hops)", labelNames: ["reason"] as const, registers });
  new Gauge({
    name: `${prefix}consumer_lag`,
    help: "Messages a durable consumer has not yet had acknowledged (pending + ack pending)",
    labelNames: ["stream", "durable"] as const,
    registers,
    async collect() {
      this.reset();
      for (const info of lagSources.values()) {
        try {
          const i = await info();
          this.set({ stream: i.stream, durable: i.durable }, i.numPending + i.numAckPending);
        } catch {
          // A consumer that cannot answer right now (closing, reconnecting) is skipped for this scrape.
        }
      }
    },
  });
  return {
    published,
    delivered,
    redelivered,
    deadLettered,
    rejected,
    trackLag(key, info) {
      lagSources.set(key, info);
      return () => lagSources.delete(key);
    },
  };
}
