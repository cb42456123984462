// Lifecycle events of sandboxes, for whoever publishes them (the bus) or shows them (dashboard, CLI).
import type { Logger } from "pino";
import type { PauseKind } from "@burrow/orchestrator";

/**
 * `pause_converted`: the orchestrator turned a memory pause into a filesystem pause on its own (age, host restart).
 * `lost`: in a cluster, the sandbox's node went down (sent once, by one surviving node); `recovered`: that node came
 * back with the sandbox and took it back (sent by it). A lost sandbox is not ended: it may still be recovered.
 * `moved`: another node took over a filesystem-paused sandbox of a lost or drained node (sent by the new node; the
 * sandbox is still paused, the resume that follows sends `resumed`).
 */
export type SandboxLifecycleEventType = "created" | "paused" | "resumed" | "killed" | "timed_out" | "pause_converted" | "lost" | "recovered" | "moved";

/** Why a sandbox ended. */
export type SandboxEndReason = "api" | "timeout" | "crashed" | "lost" | "orchestrator";
/** Why a sandbox was paused: a pause request, or its timeout with `autoPause`. */
export type SandboxPauseReason = "api" | "timeout";
/** Why a sandbox was resumed: connect (or legacy resume), or the first request routed to it with `autoResume`. */
export type SandboxResumeReason = "api" | "auto_resume";
/** Why a memory pause became a filesystem pause: its age, or its processes were gone after a host restart. */
export type PauseConversionReason = "age" | "host_restart";

export interface SandboxLifecycleEvent {
  type: SandboxLifecycleEventType;
  sandboxId: string;
  templateId: string;
  metadata: Record<string, string>;
  timestamp: Date;
  /**
   * Why. Ended (`killed`, `timed_out`): `api` (DELETE), `timeout`, `crashed` (its init died), `lost` (gone after a
   * restart), `orchestrator` (ended outside the API). `paused`: `api` or `timeout`. `resumed`: `api` (connect) or
   * `auto_resume` (traffic). `pause_converted`: `age` or `host_restart`. Absent on `created`.
   */
  reason?: SandboxEndReason | SandboxPauseReason | SandboxResumeReason | PauseConversionReason;
  /** `paused` and `pause_converted`: how the sandbox is paused now. */
  pauseKind?: PauseKind;
  /**
   * `lost`, sent by a node that has no row of the sandbox (another node's): its team as its owner record says, null
   * for the owning node's default team; absent when the record does not say (older nodes).
   */
  teamId?: string | null;
  /** `moved`: the node it was on and the node that has it now. */
  from?: string;
  to?: string;
  /** `created`: its network as enforced from its start (empty lists: no rules; ingress only with a network config). */
  network?: SandboxEventNetwork;
}

/** A sandbox's network in its `created` event: the internet switch and E2B's allowOut/denyOut, ingress when set. */
export interface SandboxEventNetwork {
  allowInternetAccess: boolean;
  allowOut: string[];
  denyOut: string[];
  allowPublicTraffic?: boolean;
  maskRequestHost?: string;
}

export type SandboxEventListener = (event: SandboxLifecycleEvent) => void;

export interface SandboxEventStreamOptions {
  signal?: AbortSignal;
  /** Events buffered for a slow consumer; beyond it the oldest are dropped. @default 1000 */
  bufferSize?: number;
}

/** A synchronous fan-out of lifecycle events with an AsyncIterable view. Listeners never break the emitter. */
export class SandboxEvents {
  readonly #listeners = new Set<SandboxEventListener>();
  readonly #logger: Logger | undefined;

  constructor(logger?: Logger) {
    this.#logger = logger;
  }

  /** Call `listener` for every event from now on; returns the unsubscribe function. */
  subscribe(listener: SandboxEventListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  emit(event: SandboxLifecycleEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch (err) {
        this.#logger?.error({ err, event: event.type, sandboxId: event.sandboxId }, "sandbox event listener failed");
      }
    }
  }

  /** Events from now on as an AsyncIterable; ends when `signal` aborts or the consumer breaks. */
  async *stream(opts: SandboxEventStreamOptions = {}): AsyncIterable<SandboxLifecycleEvent> {
    const bufferSize = opts.bufferSize ?? 1000;
    const buffer: SandboxLifecycleEvent[] = [];
    let wake: (() => void) | undefined;
    const unsubscribe = this.subscribe((event) => {
      if (buffer.length >= bufferSize) buffer.shift();
      buffer.push(event);
      wake?.();
    });
    const onAbort = () => wake?.();
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      while (!opts.signal?.aborted) {
        const next = buffer.shift();
        if (next) {
          yield next;
          continue;
        }
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
    } finally {
      unsubscribe();
      opts.signal?.removeEventListener("abort", onAbort);
    }
  }
}
