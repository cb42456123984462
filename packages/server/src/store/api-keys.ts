// API keys are stored as sha256 hashes: the database alone never reveals a usable key.
import { createHash } from "node:crypto";
import type { Db } from "./database.js";

export interface ApiKeyInfo {
  id: number;
  /** First characters of the key, for display (`e2b_1a2b…`). */
  prefix: string;
  createdAt: Date;
}

export function hashApiKey(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

const PREFIX_LENGTH = 8;

export class ApiKeyStore {
  readonly #insert;
  readonly #byHash;
  readonly #count;
  readonly #all;

  constructor(db: Db) {
    this.#insert = db.prepare<[string, string, number]>(
      "INSERT INTO api_keys (hash, prefix, created_at) VALUES (?, ?, ?) ON CONFLICT (hash) DO NOTHING",
    );
    this.#byHash = db.prepare<[string], { id: number; prefix: string; created_at: number }>(
      "SELECT id, prefix, created_at FROM api_keys WHERE hash = ? AND revoked_at IS NULL",
    );
    this.#count = db.prepare<[], { n: number }>("SELECT count(*) AS n FROM api_keys");
    this.#all = db.prepare<[], { id: number; prefix: string; created_at: number }>(
      "SELECT id, prefix, created_at FROM api_keys ORDER BY id",
    );
  }

  /** Register a key (idempotent) and return its row. */
  add(key: string, now = new Date()): ApiKeyInfo {
    const hash = hashApiKey(key);
    this.#insert.run(hash, key.slice(0, PREFIX_LENGTH), now.getTime());
    return this.#lookupHash(hash)!;
  }

  /** The key's row when `key` is registered. */
  verify(key: string): ApiKeyInfo | undefined {
    return this.#lookupHash(hashApiKey(key));
  }

  count(): number {
    return this.#count.get()!.n;
  }

  list(): ApiKeyInfo[] {
    return this.#all.all().map((r) => ({ id: r.id, prefix: r.prefix, createdAt: new Date(r.created_at) }));
  }

  #lookupHash(hash: string): ApiKeyInfo | undefined {
    const row = this.#byHash.get(hash);
    return row && { id: row.id, prefix: row.prefix, createdAt: new Date(row.created_at) };
  }
}
