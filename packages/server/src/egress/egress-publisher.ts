// Egress records onto the bus as `sbx.<template>.<sandbox>.net.<allowed|denied>`, live (not durable: a busy sandbox
// makes many, and GET /burrow/v1/sandboxes/{id}/egress keeps the recent ones), beside the lifecycle events.
import { sandboxEventSubject, type Bus } from "@burrow/bus";
import type { EgressEvent, Orchestrator } from "@burrow/orchestrator";
import type { Logger } from "pino";

export function publishEgressEvents(orchestrator: Orchestrator, bus: Bus, logger: Logger): () => void {
  if (!orchestrator.onEgressEvent) return () => undefined;
  return orchestrator.onEgressEvent((event: EgressEvent) => {
    const subject = egressSubject(event);
    const payload = new TextEncoder().encode(JSON.stringify({ category: "net", type: event.verdict, ...event }));
    bus
      .publish(subject, payload, { headers: { "content-type": "application/json", "burrow-event": `net.${event.verdict}` } })
      .catch((error: unknown) => logger.warn({ err: error, sandboxId: event.sandboxId }, "could not publish an egress event"));
  });
}

export function egressSubject(event: Pick<EgressEvent, "templateId" | "sandboxId" | "verdict">): string {
  // The bus's subject scheme, with `net` as the category (its token escaping for the ids).
  return sandboxEventSubject({ templateId: event.templateId || "unknown", sandboxId: event.sandboxId, category: "net" as never, type: event.verdict as never });
}
