// Teams and their keys in burrow.db. Keys are stored as sha256 hashes (store/api-keys.ts); a revoked key keeps its
// row (revoked_at) so that what it created keeps its team, and stops authenticating at once.
import { randomUUID } from "node:crypto";
import { BurrowError, Code } from "@burrow/protocol";
import { hashApiKey } from "../store/api-keys.js";
import type { Db } from "../store/database.js";
import type { TeamQuotaOverrides } from "./team-quotas.js";

export type KeyRole = "member" | "admin" | "instance_admin";

export interface Team {
  teamId: string;
  name: string;
  quotas: TeamQuotaOverrides;
  createdAt: Date;
}

/** What changed in the store, for a cluster node to pass on (cluster/team-sync.ts). */
export type TeamStoreChange = { kind: "team"; teamId: string } | { kind: "key"; publicId: string };

/** A team as other nodes of a cluster need it, deleted or not. */
export interface TeamSnapshot {
  teamId: string;
  name: string;
  quotas: TeamQuotaOverrides;
  createdAt: number;
  deletedAt: number | null;
}

/** A key as other nodes of a cluster need it: its stored hash, never the key. */
export interface KeySnapshot {
  publicId: string;
  teamId: string;
  name: string;
  role: KeyRole;
  hash: string;
  prefix: string;
  suffix: string | null;
  valueLength: number | null;
  createdAt: number;
  revokedAt: number | null;
}

/** How an imported key landed: its team not (yet) known here, or its hash already another key's. */
export type KeyImport = "imported" | "no_team" | "conflict";

export interface TeamKey {
  /** api_keys.id: what sandboxes and secrets reference. */
  id: number;
  /** E2B's key id (a uuid), used by the /api-keys endpoints. */
  publicId: string;
  teamId: string;
  name: string;
  role: KeyRole;
  prefix: string;
  suffix: string | null;
  valueLength: number | null;
  createdAt: Date;
  lastUsed: Date | null;
  revokedAt: Date | null;
}

interface KeyRow {
  id: number;
  public_id: string;
  team_id: string | null;
  name: string;
  role: string;
  prefix: string;
  suffix: string | null;
  value_length: number | null;
  created_at: number;
  last_used: number | null;
  revoked_at: number | null;
}

interface TeamRow {
  team_id: string;
  name: string;
  quotas: string;
  created_at: number;
  deleted_at: number | null;
}

const PREFIX_LENGTH = 8;
const SUFFIX_LENGTH = 4;
/** lastUsed is written at most this often per key: a write per request would serialize every API call. */
const LAST_USED_RESOLUTION_MS = 60_000;

const KEY_COLUMNS = "id, public_id, team_id, name, role, prefix, suffix, value_length, created_at, last_used, revoked_at";

function toKey(r: KeyRow): TeamKey {
  return {
    id: r.id,
    publicId: r.public_id,
    teamId: r.team_id ?? "",
    name: r.name,
    role: (r.role === "admin" || r.role === "instance_admin" ? r.role : "member") as KeyRole,
    prefix: r.prefix,
    suffix: r.suffix,
    valueLength: r.value_length,
    createdAt: new Date(r.created_at),
    lastUsed: r.last_used === null ? null : new Date(r.last_used),
    revokedAt: r.revoked_at === null ? null : new Date(r.revoked_at),
  };
}

function toTeam(r: TeamRow): Team {
  let quotas: TeamQuotaOverrides = {};
  try {
    quotas = JSON.parse(r.quotas) as TeamQuotaOverrides;
  } catch {
    // A hand-edited row: no overrides rather than a broken team.
  }
  return { teamId: r.team_id, name: r.name, quotas, createdAt: new Date(r.created_at) };
}

export class TeamStore {
  readonly #db: Db;
  /** Keys by hash: authentication runs on every request. Invalidated on every key write. */
  readonly #byHash = new Map<string, TeamKey | null>();
  /** Anchor keys by key: they never change once a key has a team. */
  readonly #anchors = new Map<number, number>();
  #onChange: ((change: TeamStoreChange) => void) | undefined;

  constructor(db: Db) {
    this.#db = db;
  }

  /** Be told of every change made through this store's API (after its commit); imports are not told. */
  onChange(listener: (change: TeamStoreChange) => void): void {
    this.#onChange = listener;
  }

  #changed(change: TeamStoreChange): void {
    this.#onChange?.(change);
  }

  // ---- teams

  createTeam(name: string, now = new Date()): Team {
    const teamId = randomUUID();
    try {
      this.#db.prepare("INSERT INTO teams (team_id, name, quotas, created_at) VALUES (?, ?, '{}', ?)").run(teamId, name, now.getTime());
    } catch (err) {
      if ((err as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE") {
        throw new BurrowError(Code.AlreadyExists, `a team named "${name}" already exists`);
      }
      throw err;
    }
    this.#changed({ kind: "team", teamId });
    return this.team(teamId)!;
  }

  /** A team that exists (not deleted). */
  team(teamId: string): Team | undefined {
    const row = this.#db.prepare<[string], TeamRow>("SELECT * FROM teams WHERE team_id = ? AND deleted_at IS NULL").get(teamId);
    return row && toTeam(row);
  }

  teams(): Team[] {
    return this.#db.prepare<[], TeamRow>("SELECT * FROM teams WHERE deleted_at IS NULL ORDER BY created_at, name").all().map(toTeam);
  }

  /**
   * Mark a team deleted. Its row stays (revoked keys and the audit log reference it) under a name no request can
   * give (a control character), so that its name is free for a new team.
   */
  markDeleted(teamId: string, now = new Date()): void {
    this.#db
      .prepare("UPDATE teams SET deleted_at = ?, name = name || char(1) || team_id WHERE team_id = ? AND deleted_at IS NULL")
      .run(now.getTime(), teamId);
    this.#changed({ kind: "team", teamId });
  }

  setQuotas(teamId: string, quotas: TeamQuotaOverrides): Team | undefined {
    this.#db.prepare("UPDATE teams SET quotas = ? WHERE team_id = ?").run(JSON.stringify(quotas), teamId);
    this.#changed({ kind: "team", teamId });
    return this.team(teamId);
  }

  renameTeam(teamId: string, name: string): void {
    try {
      this.#db.prepare("UPDATE teams SET name = ? WHERE team_id = ?").run(name, teamId);
    } catch (err) {
      if ((err as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE") {
        throw new BurrowError(Code.AlreadyExists, `a team named "${name}" already exists`);
      }
      throw err;
    }
    this.#changed({ kind: "team", teamId });
  }

  // ---- keys

  /** Register a new key's hash in a team. The plaintext is the caller's to show once. */
  addKey(key: string, input: { teamId: string; name: string; role: KeyRole }, now = new Date()): TeamKey {
    const publicId = randomUUID();
    this.#db
      .prepare(
        `INSERT INTO api_keys (hash, prefix, created_at, team_id, public_id, name, role, value_length, suffix)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(hashApiKey(key), key.slice(0, PREFIX_LENGTH), now.getTime(), input.teamId, publicId, input.name, input.role, key.length, key.slice(-SUFFIX_LENGTH));
    this.#byHash.clear();
    this.#changed({ kind: "key", publicId });
    return this.keyByPublicId(publicId)!;
  }

  /** The live (not revoked) key a plaintext names, or undefined. */
  verify(key: string): TeamKey | undefined {
    const hash = hashApiKey(key);
    let found = this.#byHash.get(hash);
    if (found === undefined) {
      const row = this.#db.prepare<[string], KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE hash = ?`).get(hash);
      found = row && row.revoked_at === null ? toKey(row) : null;
      this.#byHash.set(hash, found);
    }
    return found ?? undefined;
  }

  /** Record a use (coarsely: at most once a minute per key). */
  touch(key: TeamKey, now = Date.now()): void {
    if (key.lastUsed && now - key.lastUsed.getTime() < LAST_USED_RESOLUTION_MS) return;
    key.lastUsed = new Date(now);
    this.#db.prepare("UPDATE api_keys SET last_used = ? WHERE id = ?").run(now, key.id);
  }

  keyById(id: number): TeamKey | undefined {
    const row = this.#db.prepare<[number], KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = ?`).get(id);
    return row && toKey(row);
  }

  keyByPublicId(publicId: string): TeamKey | undefined {
    const row = this.#db.prepare<[string], KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE public_id = ?`).get(publicId);
    return row && toKey(row);
  }

  /** Live keys of a team, oldest first. */
  keysOf(teamId: string): TeamKey[] {
    return this.#db
      .prepare<[string], KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE team_id = ? AND revoked_at IS NULL ORDER BY id`)
      .all(teamId)
      .map(toKey);
  }

  renameKey(id: number, name: string): void {
    this.#db.prepare("UPDATE api_keys SET name = ? WHERE id = ?").run(name, id);
    this.#byHash.clear();
    this.#keyChanged(id);
  }

  /** Mark a key revoked; true when it was live. */
  revokeKey(id: number, now = new Date()): boolean {
    const changed = this.#db.prepare("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL").run(now.getTime(), id).changes > 0;
    this.#byHash.clear();
    if (changed) this.#keyChanged(id);
    return changed;
  }

  #keyChanged(id: number): void {
    const publicId = this.keyById(id)?.publicId;
    if (publicId) this.#changed({ kind: "key", publicId });
  }

  // ---- cluster (cluster/team-sync.ts): rows by their shared ids (local integer ids differ between nodes)

  teamIds(): string[] {
    return this.#db.prepare<[], { team_id: string }>("SELECT team_id FROM teams").all().map((r) => r.team_id);
  }

  keyPublicIds(): string[] {
    return this.#db.prepare<[], { public_id: string }>("SELECT public_id FROM api_keys WHERE public_id IS NOT NULL").all().map((r) => r.public_id);
  }

  exportTeam(teamId: string): TeamSnapshot | undefined {
    const row = this.#db.prepare<[string], TeamRow>("SELECT * FROM teams WHERE team_id = ?").get(teamId);
    return row && { teamId: row.team_id, name: row.name, quotas: toTeam(row).quotas, createdAt: row.created_at, deletedAt: row.deleted_at };
  }

  exportKey(publicId: string): KeySnapshot | undefined {
    const row = this.#db.prepare<[string], KeyRow & { hash: string }>(`SELECT ${KEY_COLUMNS}, hash FROM api_keys WHERE public_id = ?`).get(publicId);
    if (!row || row.team_id === null) return undefined;
    const k = toKey(row);
    return {
      publicId,
      teamId: k.teamId,
      name: k.name,
      role: k.role,
      hash: row.hash,
      prefix: k.prefix,
      suffix: k.suffix,
      valueLength: k.valueLength,
      createdAt: row.created_at,
      revokedAt: row.revoked_at,
    };
  }

  /**
   * Take in a team another node wrote: added, or renamed, its quotas replaced; a deletion sticks. False when its
   * name is a different local team's (two nodes made the same name at once); the caller says so.
   */
  importTeam(t: TeamSnapshot): boolean {
    try {
      this.#db
        .prepare(
          `INSERT INTO teams (team_id, name, quotas, created_at, deleted_at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (team_id) DO UPDATE SET name = excluded.name, quotas = excluded.quotas,
             deleted_at = COALESCE(teams.deleted_at, excluded.deleted_at)`,
        )
        .run(t.teamId, t.name, JSON.stringify(t.quotas), t.createdAt, t.deletedAt);
      return true;
    } catch (err) {
      if ((err as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE") return false;
      throw err;
    }
  }

  /** Take in a key another node wrote, by its public id: added, or renamed; a revocation sticks and applies at once. */
  importKey(k: KeySnapshot): KeyImport {
    if (!this.#db.prepare<[string], { n: number }>("SELECT count(*) AS n FROM teams WHERE team_id = ?").get(k.teamId)!.n) return "no_team";
    try {
      this.#db
        .prepare(
          `INSERT INTO api_keys (hash, prefix, created_at, team_id, public_id, name, role, value_length, suffix, revoked_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (public_id) DO UPDATE SET name = excluded.name, role = excluded.role,
             revoked_at = COALESCE(api_keys.revoked_at, excluded.revoked_at)`,
        )
        .run(k.hash, k.prefix, k.createdAt, k.teamId, k.publicId, k.name, k.role, k.valueLength, k.suffix, k.revokedAt);
    } catch (err) {
      if ((err as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE") return "conflict";
      throw err;
    }
    this.#byHash.clear();
    return "imported";
  }

  /**
   * The oldest key (api_keys.id, revoked or not) of the team a key belongs to: a stable stand-in for the team in
   * tables that reference a key as their owner (secrets.owner_key_id), so that every key of a team shares them.
   * Keys are never deleted, so it never changes. Undefined for an unknown key.
   */
  teamAnchorKey(keyId: number): number | undefined {
    const cached = this.#anchors.get(keyId);
    if (cached !== undefined) return cached;
    const row = this.#db
      .prepare<[number], { id: number | null }>("SELECT min(id) AS id FROM api_keys WHERE team_id = (SELECT team_id FROM api_keys WHERE id = ?)")
      .get(keyId);
    if (row?.id == null) return undefined;
    this.#anchors.set(keyId, row.id);
    return row.id;
  }

  /** The anchor key of a team (its oldest key, revoked or not; see teamAnchorKey); undefined for a team without keys. */
  anchorOfTeam(teamId: string): number | undefined {
    return this.#db.prepare<[string], { id: number | null }>("SELECT min(id) AS id FROM api_keys WHERE team_id = ?").get(teamId)?.id ?? undefined;
  }

  /** The team a key (api_keys.id) belongs to, revoked or not. */
  teamOfKey(id: number): string | undefined {
    return this.keyById(id)?.teamId || undefined;
  }

  // ---- bootstrap (ensure-default-team.ts)

  /** Keys that predate teams: put them in `teamId`; the oldest becomes the instance admin when there is none. */
  adoptKeys(teamId: string): void {
    this.#db.transaction(() => {
      this.#db.prepare("UPDATE api_keys SET team_id = ? WHERE team_id IS NULL").run(teamId);
      const unnamed = this.#db.prepare<[], { id: number }>("SELECT id FROM api_keys WHERE public_id IS NULL").all();
      for (const { id } of unnamed) this.#db.prepare("UPDATE api_keys SET public_id = ? WHERE id = ?").run(randomUUID(), id);
      const admin = this.#db.prepare<[], { n: number }>("SELECT count(*) AS n FROM api_keys WHERE role = 'instance_admin' AND revoked_at IS NULL").get()!;
      if (admin.n === 0) {
        this.#db
          .prepare("UPDATE api_keys SET role = 'instance_admin' WHERE id = (SELECT min(id) FROM api_keys WHERE team_id = ? AND revoked_at IS NULL)")
          .run(teamId);
      }
    })();
    this.#byHash.clear();
  }

  /** Make the key with this plaintext the instance admin (BURROW_API_KEY names the operator's key). */
  makeInstanceAdmin(key: string): void {
    this.#db.prepare("UPDATE api_keys SET role = 'instance_admin' WHERE hash = ?").run(hashApiKey(key));
    this.#byHash.clear();
  }

  /** Keys registered outside this class (ApiKeyStore.add at first start) lack a public id, length and suffix. */
  completeKey(key: string): void {
    this.#db
      .prepare("UPDATE api_keys SET value_length = ?, suffix = ? WHERE hash = ? AND value_length IS NULL")
      .run(key.length, key.slice(-SUFFIX_LENGTH), hashApiKey(key));
    const row = this.#db.prepare<[string], { id: number; public_id: string | null }>("SELECT id, public_id FROM api_keys WHERE hash = ?").get(hashApiKey(key));
    if (row && row.public_id === null) this.#db.prepare("UPDATE api_keys SET public_id = ? WHERE id = ?").run(randomUUID(), row.id);
    this.#byHash.clear();
  }
}
