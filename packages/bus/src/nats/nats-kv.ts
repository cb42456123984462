import type { KV as NatsKV } from "@nats-io/kv";
import { BurrowError, Code } from "@burrow/protocol";
import { REVISION_CONFLICT } from "../errors.js";
import { assertKey } from "../names.js";
import type { KV, KvEntry } from "../types.js";
import { fromNatsError } from "./nats-errors.js";

export class NatsKvBucket implements KV {
  constructor(readonly bucket: string, private readonly kv: NatsKV) {}

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

  async keys(): Promise<string[]> {
    try {
      const out: string[] = [];
      for await (const k of await this.kv.keys()) out.push(k);
      return out.sort();
    } catch (err) {
      throw fromNatsError(err, "kv keys");
    }
  }
}
