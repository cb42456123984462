// Sandbox lifecycle events onto the bus, on the subjects of @burrow/bus (`sbx.<template>.<sandbox>.lifecycle.<type>`)
// and into its durable event stream, so triggers and agents that were down still see them.
import { publishSandboxEvent, type Bus } from "@burrow/bus";
import type { Logger } from "pino";
import type { SandboxEvents } from "../lifecycle/events.js";

export function publishLifecycleEvents(events: SandboxEvents, bus: Bus, logger: Logger): () => void {
  return events.subscribe((event) => {
    publishSandboxEvent(
      bus,
      {
        category: "lifecycle",
        type: event.type,
        sandboxId: event.sandboxId,
        templateId: event.templateId,
        metadata: event.metadata,
        atMs: event.timestamp.getTime(),
      },
      { durable: true },
    ).catch((error: unknown) => logger.warn({ err: error, sandboxId: event.sandboxId }, "could not publish a lifecycle event"));
  });
}
