// Alerts: raised by watchers (OOM kills seen in the sandboxes' metric samples, start command crashes seen in their
// logs), published on the bus as `alert.<kind>` and sent to every webhook that asked for the kind and may see the
// sandbox (its team's, or every team's for webhooks the instance admin configured), with a delivery log.
import { randomBytes } from "node:crypto";
import type { Bus } from "@burrow/bus";
import type { SandboxMetricSample } from "@burrow/orchestrator";
import type { Logger } from "pino";
import type { SandboxLogEntry } from "../logs/log-entry.js";
import { START_COMMAND_TAG } from "./start-command-tag.js";
import type { Alert, AlertKind } from "./alert-kinds.js";
import { DEFAULT_DELIVERY_POLICY, DeliveryLog, deliver, type DeliveryPolicy, type DeliveryRecord } from "./alert-delivery.js";
import type { Webhook, WebhookStore } from "./webhook-store.js";

export interface AlertServiceDeps {
  webhooks: WebhookStore;
  logger: Logger;
  bus?: Bus | undefined;
  /** The team and template of a live sandbox. */
  sandboxInfo: (sandboxId: string) => { teamId?: string | undefined; templateId?: string | undefined } | undefined;
  policy?: Partial<DeliveryPolicy>;
}

export class AlertService {
  readonly #d: AlertServiceDeps;
  readonly #policy: DeliveryPolicy;
  readonly #log: DeliveryLog;
  readonly #abort = new AbortController();
  /** OOM kills counted at each sandbox's previous sample. */
  readonly #oomSeen = new Map<string, number>();
  /** Which team each delivery's alert was for, for reading the log per team. */
  readonly #teamOf = new WeakMap<DeliveryRecord, string | undefined>();

  constructor(deps: AlertServiceDeps) {
    this.#d = deps;
    this.#policy = { ...DEFAULT_DELIVERY_POLICY, ...deps.policy };
    this.#log = new DeliveryLog(this.#policy.logSize);
  }

  get webhooks(): WebhookStore {
    return this.#d.webhooks;
  }

  /** A metric sample: an OOM kill count that grew since the last one is an alert. */
  onSample(sandboxId: string, sample: SandboxMetricSample): void {
    const count = sample.oomKills ?? 0;
    const seen = this.#oomSeen.get(sandboxId) ?? 0;
    this.#oomSeen.set(sandboxId, count);
    if (count > seen) {
      this.raise("oom_kill", `the OOM killer killed ${count - seen} process(es) in sandbox ${sandboxId}`, { oomKills: count, newOomKills: count - seen }, sandboxId);
    }
  }

  /** A log entry: envd's "process ended" for the start command with a non-zero status is an alert. */
  onLogEntry(sandboxId: string, entry: SandboxLogEntry): void {
    if (entry.message !== "process ended" || entry.fields["tag"] !== START_COMMAND_TAG) return;
    const exitCode = entry.fields["exitCode"];
    if (exitCode === "0") return;
    this.raise("start_command_crash", `the start command of sandbox ${sandboxId} ended: ${entry.fields["status"] ?? `exit code ${exitCode}`}`,
      { exitCode: Number(exitCode ?? -1), status: entry.fields["status"] ?? "" }, sandboxId);
  }

  forget(sandboxId: string): void {
    this.#oomSeen.delete(sandboxId);
  }

  raise(kind: AlertKind, message: string, details: Alert["details"], sandboxId?: string): Alert {
    const info = sandboxId ? this.#d.sandboxInfo(sandboxId) : undefined;
    const alert: Alert = {
      id: `alt_${randomBytes(8).toString("hex")}`,
      kind,
      at: new Date().toISOString(),
      ...(sandboxId ? { sandboxId } : {}),
      ...(info?.templateId ? { templateId: info.templateId } : {}),
      message,
      details,
    };
    this.#d.logger.warn({ alert }, "alert");
    void this.#d.bus?.publish(`alert.${kind}`, new TextEncoder().encode(JSON.stringify(alert))).catch((err: unknown) => this.#d.logger.warn({ err, kind }, "could not publish an alert on the bus"));
    for (const hook of this.#d.webhooks.list()) {
      if (!hook.kinds.includes(kind) || !sees(hook, info?.teamId, sandboxId)) continue;
      const record = this.#log.start(alert, hook);
      this.#teamOf.set(record, hook.teamId ?? undefined);
      void deliver(alert, hook, record, this.#policy, this.#d.logger, this.#abort.signal);
    }
    return alert;
  }

  /** Deliveries newest first; a team sees those to its own webhooks, the instance admin (team undefined) all. */
  deliveries(team: string | undefined, limit: number): DeliveryRecord[] {
    return this.#log.list((r) => team === undefined || this.#teamOf.get(r) === team, limit);
  }

  close(): void {
    this.#abort.abort();
  }
}

/** A webhook of no team (the instance admin's) sees everything; a team's sees its sandboxes and host-wide alerts. */
function sees(hook: Webhook, sandboxTeam: string | undefined, sandboxId: string | undefined): boolean {
  if (hook.teamId === null || sandboxId === undefined) return true;
  return hook.teamId === sandboxTeam;
}
