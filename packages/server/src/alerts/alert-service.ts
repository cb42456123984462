// Alerts: raised by watchers (OOM kills and full disks seen in the sandboxes' metric samples, start command crashes
// seen in their logs, creates that found the pool empty, agents the bus's liveness monitor marks down, dead letters
// the bus announces), published on the bus as `alert.<kind>` and sent to every webhook that asked for the kind and
// may see it: a team's webhooks hear of its own sandboxes, queues and agents, the instance admin's of everything.
import { randomBytes } from "node:crypto";
import type { Bus } from "@burrow/bus";
import type { SandboxMetricSample } from "@burrow/orchestrator";
import type { Logger } from "pino";
import type { SandboxLogEntry } from "../logs/log-entry.js";
import { START_COMMAND_TAG } from "./start-command-tag.js";
import type { Alert, AlertKind, AlertSubject } from "./alert-kinds.js";
import { DEFAULT_DELIVERY_POLICY, DeliveryLog, deliver, type DeliveryPolicy, type DeliveryRecord } from "./alert-delivery.js";
import { DeadLetterThresholds } from "./dead-letter-watch.js";
import { DiskQuotaWatch } from "./disk-quota-watch.js";
import type { Webhook, WebhookStore } from "./webhook-store.js";

export interface AlertServiceDeps {
  webhooks: WebhookStore;
  logger: Logger;
  bus?: Bus | undefined;
  /** The team and template of a live sandbox. */
  sandboxInfo: (sandboxId: string) => { teamId?: string | undefined; templateId?: string | undefined } | undefined;
  /** The team of a volume. */
  volumeTeam?: ((volumeId: string) => string | undefined) | undefined;
  policy?: Partial<DeliveryPolicy>;
}

export class AlertService {
  readonly #d: AlertServiceDeps;
  readonly #policy: DeliveryPolicy;
  readonly #log: DeliveryLog;
  readonly #abort = new AbortController();
  /** OOM kills counted at each sandbox's previous sample. */
  readonly #oomSeen = new Map<string, number>();
  readonly #disk: DiskQuotaWatch;
  readonly #deadLetters = new DeadLetterThresholds();
  /** Which team each delivery's alert was for, for reading the log per team. */
  readonly #teamOf = new WeakMap<DeliveryRecord, string | undefined>();

  constructor(deps: AlertServiceDeps) {
    this.#d = deps;
    this.#policy = { ...DEFAULT_DELIVERY_POLICY, ...deps.policy };
    this.#log = new DeliveryLog(this.#policy.logSize);
    this.#disk = new DiskQuotaWatch((kind, message, details, about) => this.raise(kind, message, details, about), (volumeId) => deps.volumeTeam?.(volumeId));
  }

  get webhooks(): WebhookStore {
    return this.#d.webhooks;
  }

  /** A metric sample: an OOM kill count that grew since the last one is an alert, and so is a disk that filled up. */
  onSample(sandboxId: string, sample: SandboxMetricSample): void {
    const count = sample.oomKills ?? 0;
    const seen = this.#oomSeen.get(sandboxId) ?? 0;
    this.#oomSeen.set(sandboxId, count);
    if (count > seen) {
      this.raise("oom_kill", `the OOM killer killed ${count - seen} process(es) in sandbox ${sandboxId}`, { oomKills: count, newOomKills: count - seen }, { sandboxId });
    }
    this.#disk.onSample(sandboxId, sample);
  }

  /** A log entry: envd's "process ended" for the start command with a non-zero status is an alert. */
  onLogEntry(sandboxId: string, entry: SandboxLogEntry): void {
    if (entry.message !== "process ended" || entry.fields["tag"] !== START_COMMAND_TAG) return;
    const exitCode = entry.fields["exitCode"];
    if (exitCode === "0") return;
    this.raise("start_command_crash", `the start command of sandbox ${sandboxId} ended: ${entry.fields["status"] ?? `exit code ${exitCode}`}`,
      { exitCode: Number(exitCode ?? -1), status: entry.fields["status"] ?? "" }, { sandboxId });
  }

  forget(sandboxId: string): void {
    this.#oomSeen.delete(sandboxId);
    this.#disk.forget(sandboxId);
  }

  /** A webhook was removed: what was kept for it goes. */
  forgetWebhook(webhookId: string): void {
    this.#deadLetters.forgetWebhook(webhookId);
  }

  raise(kind: AlertKind, message: string, details: Alert["details"], about: AlertSubject): Alert {
    const { sandboxId } = about;
    const info = sandboxId ? this.#d.sandboxInfo(sandboxId) : undefined;
    const teamId = about.teamId ?? info?.teamId;
    const templateId = about.templateId ?? info?.templateId;
    const alert: Alert = {
      id: `alt_${randomBytes(8).toString("hex")}`,
      kind,
      at: new Date().toISOString(),
      ...(teamId ? { teamId } : {}),
      ...(sandboxId ? { sandboxId } : {}),
      ...(templateId ? { templateId } : {}),
      message,
      details,
    };
    this.#d.logger.warn({ alert }, "alert");
    void this.#d.bus?.publish(`alert.${kind}`, new TextEncoder().encode(JSON.stringify(alert))).catch((err: unknown) => this.#d.logger.warn({ err, kind }, "could not publish an alert on the bus"));
    for (const hook of this.#d.webhooks.list()) {
      if (!hook.kinds.includes(kind) || !sees(hook, teamId) || !this.#wants(hook, alert)) continue;
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

  /** A webhook's own threshold for dead letters (the only kind with one). */
  #wants(hook: Webhook, alert: Alert): boolean {
    if (alert.kind !== "dead_letters") return true;
    const total = Number(alert.details["deadLetters"] ?? 0);
    return this.#deadLetters.accepts(hook.id, hook.deadLetterThreshold ?? 1, alert.teamId, String(alert.details["queue"] ?? ""), total);
  }
}

/** A webhook of no team (the instance admin's) sees everything; a team's sees what its team owns. */
function sees(hook: Webhook, team: string | undefined): boolean {
  return hook.teamId === null || hook.teamId === team;
}
