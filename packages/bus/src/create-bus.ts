import { EmbeddedBus, type EmbeddedBusOptions } from "./embedded/embedded-bus.js";
import { NatsBus, type NatsBusOptions } from "./nats/nats-bus.js";
import type { Bus } from "./types.js";

/** Which backend to open, with that backend's own options. */
export type BusConfig = ({ kind: "embedded" } & EmbeddedBusOptions) | ({ kind: "nats" } & NatsBusOptions);

/** Opens the configured backend. Both satisfy the same conformance suite. */
export async function createBus(config: BusConfig): Promise<Bus> {
  switch (config.kind) {
    case "embedded":
      return new EmbeddedBus({ path: config.path, metrics: config.metrics });
    case "nats":
      return NatsBus.connect(config);
  }
}
