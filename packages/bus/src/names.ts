import { BurrowError, Code } from "@burrow/protocol";

const nameRe = /^[A-Za-z0-9_-]{1,64}$/;
const keyRe = /^[-/_=.a-zA-Z0-9]+$/;

/** Stream, consumer and bucket names: the characters NATS accepts everywhere. */
export function assertName(kind: string, name: string): void {
  if (!nameRe.test(name)) throw new BurrowError(Code.InvalidArgument, `invalid ${kind} name "${name}" (want [A-Za-z0-9_-]{1,64})`);
}

export function assertKey(key: string): void {
  if (!keyRe.test(key) || key.startsWith(".") || key.endsWith(".")) {
    throw new BurrowError(Code.InvalidArgument, `invalid key "${key}"`);
  }
}

export const DEFAULT_ACK_WAIT_MS = 30_000;
export const DEFAULT_DUPLICATE_WINDOW_MS = 120_000;
export const DEFAULT_MAX_PENDING = 65_536;
export const DEFAULT_REQUEST_TIMEOUT_MS = 5_000;
export const DEFAULT_NEXT_TIMEOUT_MS = 5_000;

/** Time until a delivery is redelivered, shared by both backends so their timing matches. */
export function redeliveryDelayMs(cfg: { ackWaitMs?: number; backoffMs?: number[] }, deliveryCount: number): number {
  const b = cfg.backoffMs;
  if (b && b.length > 0) return b[Math.min(deliveryCount - 1, b.length - 1)]!;
  return cfg.ackWaitMs ?? DEFAULT_ACK_WAIT_MS;
}

export function validateConsumerConfig(cfg: { durable: string; maxDeliver?: number; backoffMs?: number[]; ackWaitMs?: number }): void {
  assertName("consumer", cfg.durable);
  const md = cfg.maxDeliver ?? -1;
  if (md === 0 || md < -1) throw new BurrowError(Code.InvalidArgument, "maxDeliver must be -1 or positive");
  if (cfg.backoffMs && cfg.backoffMs.length > 0) {
    // NATS rejects a backoff list that is not shorter than max_deliver; the embedded bus enforces the same.
    if (md !== -1 && md <= cfg.backoffMs.length) throw new BurrowError(Code.InvalidArgument, "maxDeliver must exceed the backoff list length");
    if (cfg.backoffMs.some((v) => !(v > 0))) throw new BurrowError(Code.InvalidArgument, "backoff values must be positive");
  }
  if (cfg.ackWaitMs !== undefined && !(cfg.ackWaitMs > 0)) throw new BurrowError(Code.InvalidArgument, "ackWaitMs must be positive");
}
