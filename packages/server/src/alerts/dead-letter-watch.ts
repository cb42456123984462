// dead_letters: every backend announces a dead letter on `dlq.<stream>.<durable>` as it moves it (embedded and NATS
// alike), so this listens there instead of polling the dead-letter stream. Per queue, a RateWindow makes one alert
// per window of a flood; each alert carries the queue's dead letters seen since this server started and those new
// since its previous alert, and webhooks with a threshold hear of it once the count grew by that much since the
// last alert they were sent (DeadLetterThresholds). On a bus several servers share (the nodes of a cluster), every
// server reading a queue hears JetStream's max-deliveries advisory and moves the message: the dead-letter stream keeps
// one copy (msg-id), but each move is announced, so a message is counted once by its stream sequence.
import { DLQ_HEADER, queueStream, type Bus } from "@burrow/bus";
import type { Logger } from "pino";
import type { BusOwner } from "./bus-owner.js";
import type { RaiseAlert } from "./alert-kinds.js";
import { RateWindow } from "./rate-window.js";

const QUEUE_PREFIX = queueStream("");
/** Dead letters remembered to count each once: far more than movers can announce twice in a window. */
const REMEMBERED = 10_000;

export interface DeadLetterWatchDeps {
  bus: Bus;
  owner: (queue: string) => BusOwner;
  raise: RaiseAlert;
  windowMs: number;
  logger: Logger;
}

export function watchDeadLetters(d: DeadLetterWatchDeps): () => void {
  const totals = new Map<string, number>();
  const window = new RateWindow(d.windowMs, (queue, count) => {
    const owner = d.owner(queue);
    const total = totals.get(queue) ?? count;
    d.raise("dead_letters", `${count} message(s) of queue ${owner.name} went to the dead-letter queue`, {
      queue: owner.name,
      newDeadLetters: count,
      deadLetters: total,
    }, { teamId: owner.teamId });
  });
  const sub = d.bus.subscribe("dlq.>");
  const counted = new Set<string>();
  void (async () => {
    for await (const msg of sub) {
      const seq = msg.headers[DLQ_HEADER.seq];
      const moved = `${msg.headers[DLQ_HEADER.stream] ?? ""}:${seq ?? ""}`;
      if (seq !== undefined) {
        if (counted.has(moved)) continue;
        counted.add(moved);
        if (counted.size > REMEMBERED) counted.delete(counted.values().next().value!);
      }
      // dlq.<stream>.<durable>; queue stream names are QUEUE_<name>, which no token encoding changes.
      const stream = msg.subject.split(".")[1] ?? "";
      if (!stream.startsWith(QUEUE_PREFIX)) continue;
      const queue = stream.slice(QUEUE_PREFIX.length);
      totals.set(queue, (totals.get(queue) ?? 0) + 1);
      try {
        window.hit(queue);
      } catch (err) {
        d.logger.warn({ err, queue }, "could not raise a dead_letters alert");
      }
    }
  })().catch((err: unknown) => d.logger.warn({ err }, "dead-letter alerts stopped"));
  return () => {
    window.close();
    void sub.close();
  };
}

/**
 * Per webhook and queue, the dead-letter count it was last told of: a webhook with threshold N receives a
 * dead_letters alert once the count grew by at least N since then (N = 1, the default: every alert).
 */
export class DeadLetterThresholds {
  readonly #told = new Map<string, number>();

  accepts(webhookId: string, threshold: number, teamId: string | undefined, queue: string, total: number): boolean {
    const key = `${webhookId}\n${teamId ?? ""}\n${queue}`;
    if (total - (this.#told.get(key) ?? 0) < threshold) return false;
    this.#told.set(key, total);
    return true;
  }

  forgetWebhook(webhookId: string): void {
    for (const key of this.#told.keys()) if (key.startsWith(`${webhookId}\n`)) this.#told.delete(key);
  }
}
