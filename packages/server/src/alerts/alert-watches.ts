// The watchers that raise alerts from events outside the sandboxes' samples and logs: agents the liveness monitor
// marks down, dead letters the bus announces, creates that found the pool empty. Each ends with the returned cleanup.
import type { Bus, LivenessMonitor } from "@burrow/bus";
import type { SandboxRecord } from "@burrow/orchestrator";
import type { Logger } from "pino";
import type { SandboxEvents } from "../lifecycle/events.js";
import type { AlertService } from "./alert-service.js";
import { busOwner } from "./bus-owner.js";
import { watchDeadLetters } from "./dead-letter-watch.js";
import { watchHeartbeats } from "./heartbeat-watch.js";
import { PoolExhaustedWatch } from "./pool-exhausted-watch.js";

/** How often one queue's dead letters, or one template's empty pool for one team, may raise an alert. @default 60 s */
export const DEFAULT_ALERT_WINDOW_MS = 60_000;

export interface AlertWatchesDeps {
  alerts: AlertService;
  logger: Logger;
  events: SandboxEvents;
  bus?: Bus | undefined;
  /** The bus's liveness monitor (the one the agent routes answer from). */
  liveness?: LivenessMonitor | undefined;
  teams: () => { defaultTeamId: string; list: () => readonly { teamId: string }[] };
  teamOfSandbox: (sandboxId: string) => string | undefined;
  windowMs?: number;
}

export interface AlertWatches {
  /** Every create's record as the orchestrator answers it (pool_exhausted). */
  onCreated(record: SandboxRecord): void;
  forget(sandboxId: string): void;
  close(): void;
}

export function startAlertWatches(d: AlertWatchesDeps): AlertWatches {
  const windowMs = d.windowMs ?? DEFAULT_ALERT_WINDOW_MS;
  const raise = d.alerts.raise.bind(d.alerts);
  const owner = (stored: string) => {
    const teams = d.teams();
    return busOwner(stored, teams.list, teams.defaultTeamId);
  };
  const stops: Array<() => void> = [];
  const pool = new PoolExhaustedWatch(windowMs, raise, d.teamOfSandbox);
  stops.push(() => pool.close());
  stops.push(d.events.subscribe((event) => {
    if (event.type === "created") pool.onRecorded(event.sandboxId);
  }));
  if (d.bus) stops.push(watchDeadLetters({ bus: d.bus, owner, raise, windowMs, logger: d.logger }));
  const liveness = d.liveness;
  if (liveness) stops.push(watchHeartbeats({ events: (signal) => liveness.events({ signal }), owner, raise, logger: d.logger }));
  return {
    onCreated: (record) => pool.onCreated(record),
    forget: (sandboxId) => pool.forget(sandboxId),
    close: () => {
      for (const stop of stops.splice(0)) stop();
    },
  };
}
