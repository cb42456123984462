// Filesystem events onto the bus: for each watch asked for (REST, or `burrow.watch` metadata at create time) the
// server holds an envd WatchDir stream and publishes the changes as `sbx.<template>.<sandbox>.fs.<type>` into the
// durable sandbox event stream, so triggers see them. Changes are merged and rate-limited per sandbox (FsEventThrottle):
// a flood costs a bounded number of events, with `fs.overflow` summaries for what was dropped. Watches live in memory:
// they end with their sandbox, and a server restart drops them (clients re-create them; the metadata convention does
// not re-apply after a restart).
import { randomUUID } from "node:crypto";
import { posix } from "node:path";
import { publishSandboxEvent, type Bus, type SandboxEvent } from "@burrow/bus";
import { watchDir, type DirEvent } from "@burrow/orchestrator";
import type { Logger } from "pino";
import { BurrowError, Code } from "@burrow/protocol";
import type { UpstreamResolver } from "../gateway/gateway.js";
import type { SandboxEvents } from "../lifecycle/events.js";
import type { SandboxService } from "../lifecycle/sandbox-service.js";
import { liveEnvd } from "./live-envd.js";
import { resolveFsEventLimits, type FsEventLimits } from "./fs-event-limits.js";
import { FsEventThrottle, type FsBatch } from "./fs-event-throttle.js";

/** Create-time metadata: a path (or comma-separated paths) to watch recursively from the start. */
export const WATCH_METADATA_KEY = "burrow.watch";

export interface WatchInfo {
  watchId: string;
  sandboxId: string;
  path: string;
  recursive: boolean;
  createdAtMs: number;
}

interface Held {
  info: WatchInfo;
  stop: AbortController;
}

export interface WatchBridgeOptions {
  bus: Bus;
  sandboxes: SandboxService;
  /** The gateway's mapping of a sandbox port to where it is reachable; envd is reached through it too. */
  upstream: UpstreamResolver;
  events: SandboxEvents;
  logger: Logger;
  /** Watches one sandbox may hold. @default 32 */
  maxPerSandbox?: number;
  /** Merging window and rate limit of each sandbox's events (see FsEventLimits for defaults and env names). */
  limits?: Partial<FsEventLimits>;
}

/** Changes read from envd between two yields to the event loop. */
const READ_YIELD_EVERY = 64;

/** Publishes this many events at a time, then lets other work run: the embedded bus writes each one synchronously. */
const PUBLISH_CHUNK = 32;

export class WatchBridge {
  readonly #o: WatchBridgeOptions;
  readonly #watches = new Map<string, Held>();
  /** Per sandbox, shared by its watches, kept until the sandbox ends so that re-creating a watch cannot reset it. */
  readonly #throttles = new Map<string, FsEventThrottle>();
  readonly #limits: FsEventLimits;
  readonly #unsubscribe: Array<() => void> = [];
  #closed = false;

  constructor(o: WatchBridgeOptions) {
    this.#o = o;
    this.#limits = resolveFsEventLimits(o.limits);
    this.#unsubscribe.push(o.sandboxes.onRemoved((id) => this.#stopSandbox(id)));
    this.#unsubscribe.push(
      o.events.subscribe((e) => {
        const spec = e.type === "created" ? e.metadata[WATCH_METADATA_KEY] : undefined;
        if (!spec) return;
        for (const path of spec.split(",").map((p) => p.trim()).filter(Boolean)) {
          this.start(e.sandboxId, { path, recursive: true }).catch((err: unknown) =>
            o.logger.warn({ err, sandboxId: e.sandboxId, path }, `could not start the ${WATCH_METADATA_KEY} watch`),
          );
        }
      }),
    );
  }

  /** Starts watching; resolves once envd watches, so every change after it is published. */
  async start(sandboxId: string, o: { path: string; recursive: boolean; user?: string | undefined }): Promise<WatchInfo> {
    if (this.#closed) throw new BurrowError(Code.Unavailable, "the server is shutting down");
    if (!o.path.startsWith("/")) throw new BurrowError(Code.InvalidArgument, `path must be absolute, got "${o.path}"`);
    const live = liveEnvd(this.#o.sandboxes, this.#o.upstream, sandboxId);
    if (this.list(sandboxId).length >= (this.#o.maxPerSandbox ?? 32)) {
      throw new BurrowError(Code.ResourceExhausted, `sandbox "${sandboxId}" already has ${this.#o.maxPerSandbox ?? 32} watches`);
    }
    const root = posix.normalize(o.path);
    const stop = new AbortController();
    const events = await watchDir(live.envd, { path: root, recursive: o.recursive, user: o.user, signal: stop.signal });
    const info: WatchInfo = { watchId: randomUUID(), sandboxId, path: root, recursive: o.recursive, createdAtMs: Date.now() };
    // The sandbox may have ended while envd was answering.
    if (!this.#o.sandboxes.live(sandboxId) || this.#closed) {
      stop.abort();
      throw new BurrowError(Code.NotFound, `sandbox "${sandboxId}" ended`);
    }
    this.#watches.set(info.watchId, { info, stop });
    const throttle = this.#throttleFor(sandboxId, { templateId: live.row.templateId, metadata: live.row.metadata });
    void this.#pump(info, events, stop.signal, throttle);
    return info;
  }

  #throttleFor(sandboxId: string, base: { templateId: string; metadata: Record<string, string> }): FsEventThrottle {
    let t = this.#throttles.get(sandboxId);
    if (!t) {
      t = new FsEventThrottle(this.#limits, (batch) => this.#publish(sandboxId, base, batch));
      this.#throttles.set(sandboxId, t);
    }
    return t;
  }

  /** One window's events in order: the overflow summary first, then the kept changes, oldest first. */
  async #publish(sandboxId: string, base: { templateId: string; metadata: Record<string, string> }, batch: FsBatch): Promise<void> {
    const common = { category: "fs", sandboxId, templateId: base.templateId, metadata: base.metadata } as const;
    const events: SandboxEvent[] = [];
    if (batch.overflow) {
      const o = batch.overflow;
      events.push({ ...common, type: "overflow", path: o.path, dropped: o.dropped, droppedByType: o.droppedByType, sinceMs: o.sinceMs, atMs: o.atMs });
      this.#o.logger.debug({ sandboxId, dropped: o.dropped }, "filesystem events dropped by the rate limit");
    }
    for (const c of batch.changes) events.push({ ...common, type: c.type, path: c.path, atMs: c.atMs, ...(c.count > 1 ? { count: c.count } : {}) });
    for (let i = 0; i < events.length; i += PUBLISH_CHUNK) {
      if (i > 0) await new Promise<void>((resolve) => setImmediate(resolve));
      // Started in order without waiting on each other: both backends store them in the order they are sent.
      const results = await Promise.allSettled(events.slice(i, i + PUBLISH_CHUNK).map((e) => publishSandboxEvent(this.#o.bus, e)));
      const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
      if (failed) this.#o.logger.warn({ err: failed.reason, sandboxId }, "could not publish filesystem events");
    }
  }

  async #pump(info: WatchInfo, events: AsyncIterable<DirEvent>, signal: AbortSignal, throttle: FsEventThrottle): Promise<void> {
    let read = 0;
    try {
      for await (const event of events) {
        throttle.push(event.type, posix.join(info.path, event.name));
        // Events decoded from one network read arrive as resolved promises, all in one turn of the event loop; in a
        // flood that turn would hold off every request, so let I/O in now and then.
        if (++read % READ_YIELD_EVERY === 0) await new Promise<void>((resolve) => setImmediate(resolve));
      }
    } catch (err) {
      if (!signal.aborted) this.#o.logger.warn({ err, sandboxId: info.sandboxId, path: info.path }, "filesystem watch ended");
    } finally {
      this.#watches.delete(info.watchId);
    }
  }

  list(sandboxId?: string): WatchInfo[] {
    return [...this.#watches.values()].map((h) => h.info).filter((w) => sandboxId === undefined || w.sandboxId === sandboxId);
  }

  /** False when there is no such watch on that sandbox. */
  stop(sandboxId: string, watchId: string): boolean {
    const h = this.#watches.get(watchId);
    if (!h || h.info.sandboxId !== sandboxId) return false;
    this.#watches.delete(watchId);
    h.stop.abort();
    return true;
  }

  #stopSandbox(sandboxId: string): void {
    for (const w of this.list(sandboxId)) this.stop(sandboxId, w.watchId);
    // Changes made before the end are still published.
    const t = this.#throttles.get(sandboxId);
    this.#throttles.delete(sandboxId);
    void t?.close().catch((err: unknown) => this.#o.logger.warn({ err, sandboxId }, "could not publish the last filesystem events"));
  }

  close(): void {
    this.#closed = true;
    for (const u of this.#unsubscribe.splice(0)) u();
    for (const h of this.#watches.values()) h.stop.abort();
    this.#watches.clear();
    for (const [sandboxId, t] of this.#throttles) {
      void t.close().catch((err: unknown) => this.#o.logger.debug({ err, sandboxId }, "could not publish the last filesystem events"));
    }
    this.#throttles.clear();
  }
}
