// A local mirror of a KV bucket kept current by a watch: readers look keys up synchronously (the gateway decides per
// request without a round trip), and every write anywhere in the cluster replaces or drops the entry as it lands.
import type { KV, KvEntry } from "@nats-io/kv";
import type { Logger } from "pino";
import { whenClusterAnswers } from "./cluster-retry.js";

export interface MirroredEntry<T> {
  value: T;
  revision: number;
  /** When the bucket stored it (the NATS server's clock). */
  created: Date;
}

export class WatchedBucket<T> {
  readonly #entries = new Map<string, MirroredEntry<T>>();
  #stop: (() => void) | undefined;
  #closed = false;

  private constructor(
    private readonly kv: KV,
    private readonly decode: (bytes: Uint8Array) => T,
    private readonly logger: Logger,
    private readonly what: string,
  ) {}

  /** Start mirroring; resolves once the watch is set up (its first values may still be arriving). */
  static async open<T>(kv: KV, decode: (bytes: Uint8Array) => T, logger: Logger, what: string): Promise<WatchedBucket<T>> {
    const mirror = new WatchedBucket(kv, decode, logger, what);
    await whenClusterAnswers(`watch the ${what} bucket`, () => mirror.#watch(), { logger });
    return mirror;
  }

  /**
   * Watch anew: every key's last value comes again (newer revisions win, so nothing goes back in time), then every
   * write. For a watch that stopped delivering: when the NATS server holding its consumer goes, the watch can stay
   * silent without ending (seen on a 3-server cluster: no update for 15 s and more while writes went on).
   */
  async restart(): Promise<void> {
    if (this.#closed) return;
    // The new watch first, asked again while the cluster does not answer, and only then the old one stopped: stopping
    // first left the mirror with no watch at all when the new one could not be made (a timeout while JetStream
    // elected new leaders), and nothing updated it again — a node then kept answering from records long replaced.
    const old = this.#stop;
    await whenClusterAnswers(`watch the ${this.what} bucket again`, () => this.#watch(), { logger: this.logger });
    old?.();
    if (this.#closed) this.#stop?.();
  }

  async #watch(): Promise<void> {
    const watch = await this.kv.watch({ key: ">" });
    this.#stop = () => watch.stop();
    void (async () => {
      try {
        for await (const entry of watch) this.apply(entry);
      } catch (err) {
        if (!this.#closed) this.logger.error({ err, bucket: this.what }, "cluster bucket watch ended");
      }
    })();
  }

  /** Take in an entry read directly (a cache miss resolved by a get), unless the watch already brought a newer one. */
  apply(entry: KvEntry): MirroredEntry<T> | undefined {
    const known = this.#entries.get(entry.key);
    if (known && known.revision > entry.revision) return known;
    if (entry.operation !== "PUT") {
      this.#entries.delete(entry.key);
      return undefined;
    }
    try {
      const mirrored = { value: this.decode(entry.value), revision: entry.revision, created: entry.created };
      this.#entries.set(entry.key, mirrored);
      return mirrored;
    } catch (err) {
      this.logger.warn({ err, bucket: this.what, key: entry.key }, "unreadable cluster record ignored");
      this.#entries.delete(entry.key);
      return undefined;
    }
  }

  /** Take in what this process just wrote, so that its own reads see it before the watch brings it back. */
  remember(key: string, value: T, revision: number): void {
    const known = this.#entries.get(key);
    if (!known || known.revision < revision) this.#entries.set(key, { value, revision, created: new Date() });
  }

  get(key: string): MirroredEntry<T> | undefined {
    return this.#entries.get(key);
  }

  entries(): IterableIterator<[string, MirroredEntry<T>]> {
    return this.#entries.entries();
  }

  close(): void {
    this.#closed = true;
    this.#stop?.();
  }
}
