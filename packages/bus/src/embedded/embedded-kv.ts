import type Database from "better-sqlite3";
import { BurrowError, Code } from "@burrow/protocol";
import { REVISION_CONFLICT } from "../errors.js";
import { assertKey } from "../names.js";
import type { KV, KvEntry } from "../types.js";

/** A KV bucket in the embedded store. Revisions come from a per-bucket counter, as NATS uses the stream sequence. */
export class EmbeddedKv implements KV {
  private readonly get_: Database.Statement;
  private readonly bump: Database.Statement;
  private readonly put_: Database.Statement;
  private readonly del_: Database.Statement;

  constructor(private readonly db: Database.Database, readonly bucket: string, private readonly ttlMs: number | undefined) {
    db.prepare("INSERT INTO kv_buckets (bucket, ttl_ms, revision) VALUES (?, ?, 0) ON CONFLICT (bucket) DO UPDATE SET ttl_ms = excluded.ttl_ms")
      .run(bucket, ttlMs ?? null);
    this.get_ = db.prepare("SELECT value, revision, ts FROM kv WHERE bucket = ? AND key = ?");
    this.bump = db.prepare("UPDATE kv_buckets SET revision = revision + 1 WHERE bucket = ? RETURNING revision");
    this.put_ = db.prepare("INSERT OR REPLACE INTO kv (bucket, key, value, revision, ts) VALUES (?, ?, ?, ?, ?)");
    this.del_ = db.prepare("DELETE FROM kv WHERE bucket = ? AND key = ?");
  }

  private live(key: string): { value: Buffer; revision: number } | undefined {
    const r = this.get_.get(this.bucket, key) as { value: Buffer; revision: number; ts: number } | undefined;
    if (!r) return undefined;
    if (this.ttlMs !== undefined && r.ts < Date.now() - this.ttlMs) return undefined;
    return r;
  }

  private write(key: string, value: Uint8Array): number {
    const { revision } = this.bump.get(this.bucket) as { revision: number };
    this.put_.run(this.bucket, key, value, revision, Date.now());
    return revision;
  }

  async get(key: string): Promise<KvEntry | null> {
    assertKey(key);
    const r = this.live(key);
    return (r ? { key, value: r.value, revision: r.revision } : null);
  }

  async put(key: string, value: Uint8Array): Promise<number> {
    assertKey(key);
    return (this.db.transaction(() => this.write(key, value))());
  }

  async create(key: string, value: Uint8Array): Promise<number> {
    assertKey(key);
    return (
      this.db.transaction(() => {
        if (this.live(key)) throw new BurrowError(Code.AlreadyExists, `key "${key}" exists`);
        return this.write(key, value);
      })()
    );
  }

  async update(key: string, value: Uint8Array, revision: number): Promise<number> {
    assertKey(key);
    return (
      this.db.transaction(() => {
        const cur = this.live(key);
        if (!cur || cur.revision !== revision) {
          throw new BurrowError(Code.Aborted, `key "${key}" is at revision ${cur?.revision ?? 0}, not ${revision}`, { reason: REVISION_CONFLICT });
        }
        return this.write(key, value);
      })()
    );
  }

  async delete(key: string): Promise<void> {
    assertKey(key);
    this.db.transaction(() => {
      this.bump.get(this.bucket);
      this.del_.run(this.bucket, key);
    })();
  }

  async entries(): Promise<KvEntry[]> {
    const min = this.ttlMs === undefined ? 0 : Date.now() - this.ttlMs;
    const rows = this.db.prepare("SELECT key, value, revision FROM kv WHERE bucket = ? AND ts >= ? ORDER BY key").all(this.bucket, min) as { key: string; value: Buffer; revision: number }[];
    return rows.map((r) => ({ key: r.key, value: r.value, revision: r.revision }));
  }

  async keys(): Promise<string[]> {
    return (await this.entries()).map((e) => e.key);
  }
}
