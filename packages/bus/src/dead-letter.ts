import { encodeToken } from "./subject.js";

/** Every backend moves dead letters to this stream, subject `dlq.<stream>.<durable>`. */
export const DLQ_STREAM = "BURROW_DLQ";
export const DLQ_SUBJECTS = ["dlq.>"];

export const DLQ_HEADER = {
  reason: "burrow-dlq-reason",
  stream: "burrow-dlq-stream",
  durable: "burrow-dlq-durable",
  subject: "burrow-dlq-subject",
  seq: "burrow-dlq-seq",
  deliveries: "burrow-dlq-deliveries",
  /** The consumer's last error, when it gave one (nack or term). */
  error: "burrow-dlq-error",
} as const;

/** Longest error text kept with a dead letter. */
const MAX_ERROR = 1000;

export type DeadLetterReason = "max_deliver" | "terminated";

export function deadLetterSubject(stream: string, durable: string): string {
  return `dlq.${encodeToken(stream)}.${encodeToken(durable)}`;
}

/** Msg-id for the dead-letter copy, so two movers racing on the same message store it once. */
export function deadLetterMsgId(stream: string, seq: number): string {
  return `dlq:${stream}:${seq}`;
}

export function deadLetterHeaders(
  original: Readonly<Record<string, string>>,
  info: { reason: DeadLetterReason; stream: string; durable: string; subject: string; seq: number; deliveries: number; error?: string | undefined },
): Record<string, string> {
  const h: Record<string, string> = {};
  for (const [k, v] of Object.entries(original)) if (!k.startsWith("nats-")) h[k] = v;
  h[DLQ_HEADER.reason] = info.reason;
  h[DLQ_HEADER.stream] = info.stream;
  h[DLQ_HEADER.durable] = info.durable;
  h[DLQ_HEADER.subject] = info.subject;
  h[DLQ_HEADER.seq] = String(info.seq);
  h[DLQ_HEADER.deliveries] = String(info.deliveries);
  // Header values are one line: newlines of a stack trace become spaces.
  if (info.error) h[DLQ_HEADER.error] = info.error.replace(/[\r\n]+/g, " ").slice(0, MAX_ERROR);
  return h;
}
