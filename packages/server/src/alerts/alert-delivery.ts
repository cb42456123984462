// Delivering one alert to one webhook: POST of the alert as JSON, signed (alert-signature.ts), retried with doubling
// back-off on a failure (no answer, or any status outside 2xx) up to maxAttempts, each attempt in the delivery log.
import type { Logger } from "pino";
import type { Alert } from "./alert-kinds.js";
import { SIGNATURE_HEADER, signatureHeader } from "./alert-signature.js";
import type { Webhook } from "./webhook-store.js";

export interface DeliveryPolicy {
  maxAttempts: number;
  /** Wait before the second attempt; doubled for each one after. */
  firstRetryMs: number;
  /** How long one attempt may take. */
  timeoutMs: number;
  /** Deliveries kept in the log (the oldest go first). */
  logSize: number;
}

export const DEFAULT_DELIVERY_POLICY: DeliveryPolicy = { maxAttempts: 5, firstRetryMs: 1000, timeoutMs: 10_000, logSize: 1000 };

export interface DeliveryRecord {
  alertId: string;
  kind: Alert["kind"];
  webhookId: string;
  url: string;
  /** pending while attempts remain, then delivered or failed. */
  state: "pending" | "delivered" | "failed";
  attempts: Array<{ at: string; status?: number; error?: string }>;
}

export class DeliveryLog {
  readonly #records: DeliveryRecord[] = [];
  constructor(private readonly size: number) {}

  start(alert: Alert, hook: Webhook): DeliveryRecord {
    const record: DeliveryRecord = { alertId: alert.id, kind: alert.kind, webhookId: hook.id, url: hook.url, state: "pending", attempts: [] };
    this.#records.push(record);
    if (this.#records.length > this.size) this.#records.splice(0, this.#records.length - this.size);
    return record;
  }

  /** Newest first. */
  list(filter: (r: DeliveryRecord) => boolean, limit: number): DeliveryRecord[] {
    const out: DeliveryRecord[] = [];
    for (let i = this.#records.length - 1; i >= 0 && out.length < limit; i--) if (filter(this.#records[i]!)) out.push(this.#records[i]!);
    return out.map((r) => ({ ...r, attempts: r.attempts.map((a) => ({ ...a })) }));
  }
}

/** Deliver with retries; resolves when delivered or given up. Aborting the signal stops between attempts. */
export async function deliver(
  alert: Alert,
  hook: Webhook,
  record: DeliveryRecord,
  policy: DeliveryPolicy,
  logger: Logger,
  signal: AbortSignal,
): Promise<void> {
  const body = JSON.stringify(alert);
  for (let attempt = 1; attempt <= policy.maxAttempts && !signal.aborted; attempt++) {
    const at = new Date().toISOString();
    try {
      const res = await fetch(hook.url, {
        method: "POST",
        headers: { "content-type": "application/json", "user-agent": "burrow-alerts", [SIGNATURE_HEADER]: signatureHeader(hook.secret, body) },
        body,
        redirect: "manual",
        signal: AbortSignal.any([signal, AbortSignal.timeout(policy.timeoutMs)]),
      });
      await res.arrayBuffer().catch(() => undefined);
      record.attempts.push({ at, status: res.status });
      if (res.status >= 200 && res.status < 300) {
        record.state = "delivered";
        return;
      }
    } catch (err) {
      record.attempts.push({ at, error: (err as Error).message });
    }
    if (attempt < policy.maxAttempts) {
      const wait = policy.firstRetryMs * 2 ** (attempt - 1);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, wait);
        timer.unref();
        signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
      });
    }
  }
  record.state = "failed";
  logger.warn({ alertId: alert.id, kind: alert.kind, webhookId: hook.id, attempts: record.attempts.length }, "alert webhook delivery failed");
}
