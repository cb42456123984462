// Volumes and the sandboxes that mount them, in burrow.db. A mount row goes with its sandbox's row (ON DELETE
// CASCADE), so "mounted" means mounted by a sandbox the server still knows, running or paused.
import type { Db } from "../store/database.js";

export interface VolumeRow {
  volumeId: string;
  /** The team that owns it (its creating key's); names are unique within a team. */
  teamId: string;
  name: string;
  sizeMB: number;
  /** Random per volume; the token is derived from it (volume-tokens.ts) and never stored. */
  tokenSalt: string;
  /** The API key that created it (for the audit trail; the team decides access). */
  apiKeyId: number | null;
  createdAt: Date;
}

export interface MountRow {
  sandboxId: string;
  volumeId: string;
  name: string;
  path: string;
}

interface DbVolume {
  volume_id: string;
  team_id: string;
  name: string;
  size_mb: number;
  token_salt: string;
  api_key_id: number | null;
  created_at: number;
}

const toRow = (r: DbVolume): VolumeRow => ({
  volumeId: r.volume_id,
  teamId: r.team_id,
  name: r.name,
  sizeMB: r.size_mb,
  tokenSalt: r.token_salt,
  apiKeyId: r.api_key_id,
  createdAt: new Date(r.created_at),
});

export class VolumeStore {
  readonly #insert;
  readonly #byId;
  readonly #byName;
  readonly #all;
  readonly #delete;
  readonly #insertMount;
  readonly #mountsOf;
  readonly #mountersOf;
  readonly #insertMounts;
  readonly #adopt;

  constructor(db: Db) {
    this.#insert = db.prepare<[string, string, string, number, string, number | null, number]>(
      "INSERT INTO volumes (volume_id, team_id, name, size_mb, token_salt, api_key_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
    );
    this.#byId = db.prepare<[string], DbVolume>("SELECT * FROM volumes WHERE volume_id = ?");
    this.#byName = db.prepare<[string, string], DbVolume>("SELECT * FROM volumes WHERE team_id = ? AND name = ?");
    this.#adopt = db.prepare<[string]>("UPDATE volumes SET team_id = ? WHERE team_id = ''");
    this.#all = db.prepare<[], DbVolume>("SELECT * FROM volumes ORDER BY created_at, volume_id");
    this.#delete = db.prepare<[string]>("DELETE FROM volumes WHERE volume_id = ?");
    this.#insertMount = db.prepare<[string, string, string, number]>(
      "INSERT INTO sandbox_volumes (sandbox_id, volume_id, path, position) VALUES (?, ?, ?, ?)",
    );
    this.#mountsOf = db.prepare<[string], { sandbox_id: string; volume_id: string; name: string; path: string }>(
      `SELECT m.sandbox_id, m.volume_id, v.name, m.path FROM sandbox_volumes m JOIN volumes v USING (volume_id)
       WHERE m.sandbox_id = ? ORDER BY m.position`,
    );
    this.#mountersOf = db.prepare<[string], { sandbox_id: string }>("SELECT DISTINCT sandbox_id FROM sandbox_volumes WHERE volume_id = ?");
    this.#insertMounts = db.transaction((sandboxId: string, mounts: ReadonlyArray<{ volumeId: string; path: string }>) => {
      mounts.forEach((m, i) => this.#insertMount.run(sandboxId, m.volumeId, m.path, i));
    });
  }

  insert(row: VolumeRow): void {
    this.#insert.run(row.volumeId, row.teamId, row.name, row.sizeMB, row.tokenSalt, row.apiKeyId, row.createdAt.getTime());
  }

  get(volumeId: string): VolumeRow | undefined {
    const r = this.#byId.get(volumeId);
    return r && toRow(r);
  }

  /** A team's volume of that name. */
  getByName(teamId: string, name: string): VolumeRow | undefined {
    const r = this.#byName.get(teamId, name);
    return r && toRow(r);
  }

  list(): VolumeRow[] {
    return this.#all.all().map(toRow);
  }

  /** Give volumes migrated before any team existed (team_id '') to the default team. */
  adoptOrphans(defaultTeamId: string): void {
    this.#adopt.run(defaultTeamId);
  }

  delete(volumeId: string): boolean {
    return this.#delete.run(volumeId).changes > 0;
  }

  /** Record what a sandbox mounts (all or nothing). */
  addMounts(sandboxId: string, mounts: ReadonlyArray<{ volumeId: string; path: string }>): void {
    this.#insertMounts(sandboxId, mounts);
  }

  mountsOf(sandboxId: string): MountRow[] {
    return this.#mountsOf.all(sandboxId).map((r) => ({ sandboxId: r.sandbox_id, volumeId: r.volume_id, name: r.name, path: r.path }));
  }

  /** Sandboxes (running or paused) that mount a volume. */
  mountersOf(volumeId: string): string[] {
    return this.#mountersOf.all(volumeId).map((r) => r.sandbox_id);
  }
}
