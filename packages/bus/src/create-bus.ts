import { EmbeddedBus } from "./embedded/embedded-bus.js";
import type { BusMetrics } from "./metrics.js";
import { NatsBus } from "./nats/nats-bus.js";
import type { Bus } from "./types.js";

export type BusConfig =
  | { kind: "embedded"; /** SQLite file, or ":memory:". */ path: string; metrics?: BusMetrics }
  | {
      kind: "nats";
      servers: string | string[];
      name?: string;
      token?: string;
      user?: string;
      pass?: string;
      metrics?: BusMetrics;
      reconnect?: boolean;
    };

/** Opens the configured backend. Both satisfy the same conformance suite. */
export async function createBus(config: BusConfig): Promise<Bus> {
  switch (config.kind) {
    case "embedded":
      return new EmbeddedBus({ path: config.path, metrics: config.metrics });
    case "nats":
      return NatsBus.connect(config);
  }
}
