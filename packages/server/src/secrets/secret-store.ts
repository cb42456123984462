// The `secrets` table: metadata in the clear, the value sealed (secret-cipher.ts). Every query is scoped by owner
// (secret-owner.ts), so one owner's ids and names are invisible to another.
import type { Db } from "../store/database.js";
import { ownerScope, type SecretOwner } from "./secret-owner.js";

export interface SecretRow {
  seq: number;
  secretId: string;
  name: string;
  metadata: Record<string, string>;
  version: number;
  sealedValue: Buffer;
  createdAt: Date;
  updatedAt: Date;
}

interface RawRow {
  seq: number;
  secret_id: string;
  name: string;
  metadata: string;
  version: number;
  sealed_value: Buffer;
  created_at: number;
  updated_at: number;
}

const COLUMNS = "seq, secret_id, name, metadata, version, sealed_value, created_at, updated_at";

function fromRaw(r: RawRow): SecretRow {
  return {
    seq: r.seq,
    secretId: r.secret_id,
    name: r.name,
    metadata: JSON.parse(r.metadata) as Record<string, string>,
    version: r.version,
    sealedValue: r.sealed_value,
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
  };
}

export interface NewSecretRow {
  secretId: string;
  name: string;
  metadata: Record<string, string>;
  sealedValue: Buffer;
  now: Date;
}

export class SecretStore {
  readonly #insert;
  readonly #byId;
  readonly #byName;
  readonly #page;
  readonly #update;
  readonly #delete;

  constructor(db: Db) {
    this.#insert = db.prepare<[string, number, string, string, Buffer, number, number]>(
      "INSERT INTO secrets (secret_id, owner_key_id, name, metadata, version, sealed_value, created_at, updated_at) VALUES (?, ?, ?, ?, 1, ?, ?, ?)",
    );
    this.#byId = db.prepare<[string, number], RawRow>(`SELECT ${COLUMNS} FROM secrets WHERE secret_id = ? AND owner_key_id = ?`);
    this.#byName = db.prepare<[string, number], RawRow>(`SELECT ${COLUMNS} FROM secrets WHERE name = ? AND owner_key_id = ?`);
    this.#page = db.prepare<[number, number, number], RawRow>(
      `SELECT ${COLUMNS} FROM secrets WHERE owner_key_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
    );
    this.#update = db.prepare<[Buffer, string | null, number, string, number]>(
      "UPDATE secrets SET sealed_value = ?, metadata = coalesce(?, metadata), version = version + 1, updated_at = ? WHERE secret_id = ? AND owner_key_id = ?",
    );
    this.#delete = db.prepare<[string, number]>("DELETE FROM secrets WHERE secret_id = ? AND owner_key_id = ?");
  }

  /** Insert a secret at version 1; a name the owner already uses throws better-sqlite3's SQLITE_CONSTRAINT_UNIQUE. */
  insert(owner: SecretOwner, row: NewSecretRow): SecretRow {
    const t = row.now.getTime();
    this.#insert.run(row.secretId, ownerScope(owner), row.name, JSON.stringify(row.metadata), row.sealedValue, t, t);
    return this.byId(owner, row.secretId)!;
  }

  byId(owner: SecretOwner, secretId: string): SecretRow | undefined {
    const raw = this.#byId.get(secretId, ownerScope(owner));
    return raw && fromRaw(raw);
  }

  byName(owner: SecretOwner, name: string): SecretRow | undefined {
    const raw = this.#byName.get(name, ownerScope(owner));
    return raw && fromRaw(raw);
  }

  /** Up to `limit` secrets after cursor `afterSeq` (0 for the first page), oldest first. */
  page(owner: SecretOwner, afterSeq: number, limit: number): SecretRow[] {
    return this.#page.all(ownerScope(owner), afterSeq, limit).map(fromRaw);
  }

  /** Store a new value (the next version) and, when given, replace the metadata. False when the secret is gone. */
  update(owner: SecretOwner, secretId: string, sealedValue: Buffer, metadata: Record<string, string> | undefined, now: Date): boolean {
    const json = metadata === undefined ? null : JSON.stringify(metadata);
    return this.#update.run(sealedValue, json, now.getTime(), secretId, ownerScope(owner)).changes === 1;
  }

  delete(owner: SecretOwner, secretId: string): boolean {
    return this.#delete.run(secretId, ownerScope(owner)).changes === 1;
  }
}
