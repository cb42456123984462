import type { JetStreamManager } from "@nats-io/jetstream";
import type { KV as NatsKV } from "@nats-io/kv";
import { BurrowError, Code } from "@burrow/protocol";
import { REVISION_CONFLICT } from "../errors.js";
import { assertKey } from "../names.js";
import type { CallOptions, KV, KvEntry } from "../types.js";
import { fromNatsError } from "./nats-errors.js";
import { kvStoredKeys } from "./kv-stored-keys.js";

export class NatsKvBucket implements KV {
  constructor(readonly bucket: string, private readonly kv: NatsKV, private readonly jsm: JetStreamManager) {}

  async get(key: string): Promise<KvEntry | null> {
    assertKey(key);
    try {
      const e = await this.kv.get(key);
      if (!e || e.operation !== "PUT") return null;
      return { key, value: e.value, revision: e.revision };
    } catch (err) {
      throw fromNatsError(err, `kv get ${key}`);
    }
  }

  async put(key: string, value: Uint8Array): Promise<number> {
    assertKey(key);
    try {
      return await this.kv.put(key, value);
    } catch (err) {
      throw fromNatsError(err, `kv put ${key}`);
    }
  }

  async create(key: string, value: Uint8Array): Promise<number> {
    assertKey(key);
    try {
      return await this.kv.create(key, value);
    } catch (err) {
      const e = fromNatsError(err, `kv create ${key}`);
      throw e.reason === REVISION_CONFLICT ? new BurrowError(Code.AlreadyExists, `key "${key}" exists`, { cause: err }) : e;
    }
  }

  async update(key: string, value: Uint8Array, revision: number): Promise<number> {
    assertKey(key);
    try {
      return await this.kv.update(key, value, revision);
    } catch (err) {
      throw fromNatsError(err, `kv update ${key}`);
    }
  }

  async delete(key: string): Promise<void> {
    assertKey(key);
    try {
      await this.kv.delete(key);
    } catch (err) {
      throw fromNatsError(err, `kv delete ${key}`);
    }
  }

  async entries(opts: CallOptions = {}): Promise<KvEntry[]> {
    let keys: string[];
    try {
      keys = await kvStoredKeys(this.jsm, this.bucket);
    } catch (err) {
      throw fromNatsError(err, "kv keys");
    }
    const out: KvEntry[] = [];
    // A few reads at a time: a large bucket must not open thousands of requests at once.
    let next = 0;
    const reader = async () => {
      while (next < keys.length) {
        opts.signal?.throwIfAborted();
        const entry = await this.get(keys[next++]!);
        if (entry) out.push(entry); // a deleted or purged key keeps a marker: not live
      }
    };
    await Promise.all(Array.from({ length: Math.min(16, keys.length) }, reader));
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async keys(opts: CallOptions = {}): Promise<string[]> {
    return (await this.entries(opts)).map((e) => e.key);
  }
}
