import type { envelopePb } from "@burrow/protocol";
import { BurrowError, Code } from "@burrow/protocol";
import type { BusMetrics } from "../metrics.js";
import { publicKeyObject, verifySignature } from "./agent-key.js";
import { signingBytes } from "./canonical.js";
import type { KeyRegistry } from "./key-registry.js";
import { DEFAULT_TTL_MS, ENVELOPE_VERSION } from "./seal.js";

export type RejectReason = "malformed" | "version" | "unknown_key" | "signature" | "expired" | "stale" | "future" | "replayed" | "hop_limit";

const reasonCode: Record<RejectReason, Code> = {
  malformed: Code.InvalidArgument,
  version: Code.InvalidArgument,
  unknown_key: Code.Unauthenticated,
  signature: Code.Unauthenticated,
  expired: Code.DeadlineExceeded,
  stale: Code.DeadlineExceeded,
  future: Code.InvalidArgument,
  replayed: Code.AlreadyExists,
  hop_limit: Code.ResourceExhausted,
};

export interface VerifierOptions {
  registry: KeyRegistry;
  /** Message ids are remembered this long; older messages are refused as stale. @default 600000 */
  replayWindowMs?: number;
  /** Tolerated sender clock lead. @default 30000 */
  maxClockSkewMs?: number;
  metrics?: BusMetrics;
  now?: () => number;
}

/**
 * Checks envelopes on receipt: known key and valid Ed25519 signature, supported version, hop count within its limit,
 * not expired, not older than the replay window, and a message id not seen inside that window. Counts rejections.
 */
export class EnvelopeVerifier {
  readonly rejected: Record<RejectReason, number> = {
    malformed: 0, version: 0, unknown_key: 0, signature: 0, expired: 0, stale: 0, future: 0, replayed: 0, hop_limit: 0,
  };
  private readonly seen = new Map<string, number>();
  private readonly windowMs: number;
  private readonly skewMs: number;
  private readonly now: () => number;
  private lastSweep = 0;

  constructor(private readonly opts: VerifierOptions) {
    this.windowMs = opts.replayWindowMs ?? 600_000;
    this.skewMs = opts.maxClockSkewMs ?? 30_000;
    this.now = opts.now ?? Date.now;
  }

  /** Counts a rejection found outside verify() (e.g. an undecodable envelope). */
  count(reason: RejectReason): void {
    this.rejected[reason]++;
    this.opts.metrics?.rejected.inc({ reason });
  }

  private reject(reason: RejectReason, message: string): never {
    this.count(reason);
    throw new BurrowError(reasonCode[reason], message, { reason });
  }

  /** Throws a BurrowError whose `reason` is a RejectReason. `redelivery` skips the replay check for a broker redelivery. */
  async verify(e: envelopePb.Envelope, opts: { redelivery?: boolean } = {}): Promise<void> {
    if (e.version !== ENVELOPE_VERSION) this.reject("version", `unsupported envelope version ${e.version}`);
    if (!e.messageId || !e.sourceAgent || e.signature.length === 0) this.reject("malformed", "envelope lacks id, source or signature");
    const key = await this.opts.registry.lookup(e.sourceAgent, e.keyId);
    if (!key) this.reject("unknown_key", `no registered key ${e.keyId} for agent ${e.sourceAgent}`);
    if (!verifySignature(publicKeyObject(key.publicKey), signingBytes(e), e.signature)) {
      this.reject("signature", `bad signature on message ${e.messageId} from ${e.sourceAgent}`);
    }
    if (e.hops.length !== e.hopCount) this.reject("malformed", "hop count does not match the hop list");
    if (e.hopCount > e.maxHops) this.reject("hop_limit", `message ${e.messageId} passed ${e.hopCount} hops, limit ${e.maxHops}`);
    const now = this.now();
    const ts = Number(e.timestampMs);
    if (ts > now + this.skewMs) this.reject("future", `message ${e.messageId} is from the future`);
    if (now > ts + (e.ttlMs || DEFAULT_TTL_MS)) this.reject("expired", `message ${e.messageId} expired`);
    if (opts.redelivery) return;
    if (ts < now - this.windowMs) this.reject("stale", `message ${e.messageId} is older than the replay window`);
    this.sweep(now);
    const id = `${e.sourceAgent}\u0000${e.messageId}`;
    if (this.seen.has(id)) this.reject("replayed", `message ${e.messageId} from ${e.sourceAgent} was already received`);
    this.seen.set(id, ts + this.windowMs);
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < 1000 && this.seen.size < 100_000) return;
    this.lastSweep = now;
    for (const [id, until] of this.seen) if (until < now) this.seen.delete(id);
  }
}
