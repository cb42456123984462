// Sandbox lifecycle events onto the bus, on the subjects of @burrow/bus (`sbx.<template>.<sandbox>.lifecycle.<type>`)
// and into its durable event stream, so triggers and agents that were down still see them. Every lifecycle type the
// control plane emits (created, paused, resumed, killed, timed_out, pause_converted, lost, recovered, moved) is one of the bus's lifecycle
// types. Why it happened (`reason`: an auto-pause at the timeout, an auto-resume by traffic…) and how a paused
// sandbox is paused (`pauseKind`) travel in the payload, and so does a created sandbox's network (`network`).
import { publishSandboxEvent, type Bus } from "@burrow/bus";
import type { Logger } from "pino";
import type { LifecycleEventType } from "@burrow/bus";
import type { SandboxEvents, SandboxLifecycleEventType } from "../lifecycle/events.js";

/** Checked at compile time: adding a control-plane type the bus does not know fails the build here. */
const BUS_TYPE: { [K in SandboxLifecycleEventType]: LifecycleEventType } = {
  created: "created",
  paused: "paused",
  resumed: "resumed",
  killed: "killed",
  timed_out: "timed_out",
  pause_converted: "pause_converted",
  lost: "lost",
  recovered: "recovered",
  moved: "moved",
};

/**
 * `teamOf`: on a node of a cluster, the team of one of its sandboxes (null: its default team; undefined: unknown), put
 * in each event's payload so that every node's lifecycle stream, which has no row of another node's sandbox, passes
 * the event to that team's keys only (api/sandboxes/lifecycle-stream.ts).
 */
export function publishLifecycleEvents(events: SandboxEvents, bus: Bus, logger: Logger, teamOf?: (sandboxId: string) => string | null | undefined): () => void {
  return events.subscribe((event) => {
    const teamId = event.teamId !== undefined ? event.teamId : teamOf?.(event.sandboxId);
    publishSandboxEvent(
      bus,
      {
        category: "lifecycle",
        type: BUS_TYPE[event.type],
        sandboxId: event.sandboxId,
        templateId: event.templateId,
        metadata: event.metadata,
        atMs: event.timestamp.getTime(),
        ...(event.reason ? { reason: event.reason } : {}),
        ...(event.pauseKind ? { pauseKind: event.pauseKind } : {}),
        ...(event.network ? { network: event.network } : {}),
        ...(teamId !== undefined ? { teamId } : {}),
        ...(event.from !== undefined ? { from: event.from } : {}),
        ...(event.to !== undefined ? { to: event.to } : {}),
      },
      { durable: true },
    ).catch((error: unknown) => logger.warn({ err: error, sandboxId: event.sandboxId }, "could not publish a lifecycle event"));
  });
}

/** A checkpoint tree's event, published by the checkpoint routes (api/checkpoints/) as they happen. */
export interface CheckpointBusEvent {
  type: "checkpoint_created" | "rolled_back" | "checkpoint_deleted";
  sandboxId: string;
  templateId: string;
  metadata: Record<string, string>;
  checkpointId: string;
  parentId?: string | null | undefined;
}

export function publishCheckpointEvent(bus: Bus, event: CheckpointBusEvent, logger: Logger): void {
  const { parentId, ...rest } = event;
  publishSandboxEvent(bus, { category: "lifecycle", ...rest, ...(parentId ? { parentId } : {}) }, { durable: true }).catch((error: unknown) =>
    logger.warn({ err: error, sandboxId: event.sandboxId, checkpointId: event.checkpointId }, "could not publish a checkpoint event"),
  );
}
