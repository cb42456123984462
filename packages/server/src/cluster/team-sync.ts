// Teams and API keys known to every node. Each node keeps authenticating from its own SQLite (synchronous, local,
// unchanged); this keeps that SQLite and two buckets in step: every change made through the node's team store is
// written to `burrow_teams` / `burrow_keys` after its commit (revision-checked, merged with what another node wrote
// meanwhile), a start pushes what the buckets lack, and a watch on each bucket imports every record into SQLite by
// its shared id (team id, key public id): local integer ids differ between nodes and never leave the node.
// Per node, not shared: the default team (each node's own, made at its first start; a key in it travels as "the
// default team" and lands in the reader's) and the instance admin key (BURROW_API_KEY, each node's configuration).
import type { KV, KvEntry } from "@nats-io/kv";
import type { Logger } from "pino";
import type { KeySnapshot, TeamSnapshot, TeamStore, TeamStoreChange } from "../teams/team-store.js";
import { clusterError, isRevisionConflict } from "./cluster-errors.js";
import { ABSENT, checkedPut } from "./cluster-kv.js";
import { whenClusterAnswers } from "./cluster-retry.js";
import {
  decodeKey,
  decodeTeam,
  encodeRecord,
  KEY_RECORD_VERSION,
  mergeKey,
  mergeTeam,
  sameRecord,
  TEAM_RECORD_VERSION,
  type KeyRecord,
  type MergeBase,
  type TeamRecord,
} from "./team-records.js";

/** Writes that lost a revision race are merged and tried again this many times. */
const ATTEMPTS = 5;

export interface TeamSyncOptions {
  teams: KV;
  keys: KV;
  store: TeamStore;
  defaultTeamId: string;
  logger: Logger;
  /** A key revoked on another node, by its local id here: its open requests and streams are ended. */
  onRevoked?: (keyId: number) => void;
}

interface Bucket<R> {
  kv: KV;
  what: string;
  decode: (bytes: Uint8Array) => R;
  merge: (stored: R, ours: R, base: MergeBase<R>) => R;
  /** Each record as this node last saw it in the bucket (read, written or watched): the base of its next merge. */
  known: Map<string, { record: R; revision: number }>;
}

export class TeamSync {
  readonly #o: TeamSyncOptions;
  readonly #teams: Bucket<TeamRecord>;
  readonly #keys: Bucket<KeyRecord>;
  /** Writes of one id in the order they were made here. */
  readonly #queue = new Map<string, Promise<void>>();
  /** Keys whose team has not been imported yet, by team id. */
  readonly #waiting = new Map<string, Map<string, KeySnapshot>>();
  readonly #stops: Array<() => void> = [];
  #closed = false;

  private constructor(o: TeamSyncOptions) {
    this.#o = o;
    this.#teams = { kv: o.teams, what: "team", decode: decodeTeam, merge: mergeTeam, known: new Map() };
    this.#keys = { kv: o.keys, what: "API key", decode: decodeKey, merge: mergeKey, known: new Map() };
  }

  /** Push what this node has, then mirror both buckets; changes made through the store from now on are written. */
  static async start(o: TeamSyncOptions): Promise<TeamSync> {
    const sync = new TeamSync(o);
    o.store.onChange((change) => sync.#changed(change));
    for (const teamId of o.store.teamIds()) {
      const record = sync.#teamRecord(teamId);
      if (record) await sync.#write(sync.#teams, teamId, record, "stored");
    }
    for (const publicId of o.store.keyPublicIds()) {
      const record = sync.#keyRecord(publicId);
      if (record) await sync.#write(sync.#keys, publicId, record, "stored");
    }
    // Teams first: a key is imported once its team is there (a key met before its team waits for it).
    await sync.#watch(sync.#teams, (r) => sync.#importTeam(r));
    await sync.#watch(sync.#keys, (r) => sync.#importKey(r));
    return sync;
  }

  /** Watch anew (a watch whose NATS server went can go silent; see WatchedBucket.restart). */
  async restartWatches(): Promise<void> {
    // The old watches stop once the new ones are there: until then they are all this node has.
    const old = this.#stops.splice(0);
    try {
      await this.#watch(this.#teams, (r) => this.#importTeam(r));
      await this.#watch(this.#keys, (r) => this.#importKey(r));
    } catch (err) {
      this.#stops.push(...old);
      throw err;
    }
    for (const stop of old) stop();
    if (this.#closed) for (const stop of this.#stops.splice(0)) stop();
  }

  /** Wait for the writes under way. */
  async flush(): Promise<void> {
    await Promise.all([...this.#queue.values()]);
  }

  close(): void {
    this.#closed = true;
    for (const stop of this.#stops.splice(0)) stop();
  }

  // ---- local changes to the buckets

  #changed(change: TeamStoreChange): void {
    if (this.#closed) return;
    // The record and its base are taken now, as this change left them: a later import must not be what gets written.
    if (change.kind === "team") {
      const record = this.#teamRecord(change.teamId);
      const base = this.#teams.known.get(change.teamId)?.record;
      if (record) this.#enqueue(`t:${change.teamId}`, () => this.#write(this.#teams, change.teamId, record, base));
    } else {
      const record = this.#keyRecord(change.publicId);
      const base = this.#keys.known.get(change.publicId)?.record;
      if (record) this.#enqueue(`k:${change.publicId}`, () => this.#write(this.#keys, change.publicId, record, base));
    }
  }

  #enqueue(id: string, write: () => Promise<void>): void {
    const next = (this.#queue.get(id) ?? Promise.resolve()).then(write).catch((err: unknown) => {
      // The SQLite commit stands; other nodes learn of it at this node's next start (its push).
      this.#o.logger.warn({ err, id }, "a team or key change could not be written to the cluster");
    });
    this.#queue.set(id, next);
    void next.then(() => {
      if (this.#queue.get(id) === next) this.#queue.delete(id);
    });
  }

  /** Write `ours` over whatever is stored, merged (revision-checked: a concurrent writer's change is merged, not lost). */
  async #write<R extends object>(bucket: Bucket<R>, id: string, ours: R, base: MergeBase<R>): Promise<void> {
    const what = `write ${bucket.what} ${id}`;
    for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
      const entry = await whenClusterAnswers(what, () => bucket.kv.get(id), { logger: this.#o.logger });
      try {
        if (!entry || entry.operation !== "PUT") {
          this.#know(bucket, id, ours, await checkedPut(bucket.kv, id, encodeRecord(ours as TeamRecord), entry?.revision ?? ABSENT));
          return;
        }
        const stored = bucket.decode(entry.value);
        const merged = bucket.merge(stored, ours, base);
        this.#know(bucket, id, stored, entry.revision);
        if (sameRecord(merged, stored)) return;
        this.#know(bucket, id, merged, await checkedPut(bucket.kv, id, encodeRecord(merged as TeamRecord), entry.revision));
        return;
      } catch (err) {
        if (!isRevisionConflict(err)) throw clusterError(err, what);
      }
    }
    throw clusterError(new Error(`still changed by other writers after ${ATTEMPTS} attempts`), what);
  }

  /** Remember a record at a revision unless a newer one is known; false when it was older. */
  #know<R>(bucket: Bucket<R>, id: string, record: R, revision: number): boolean {
    const known = bucket.known.get(id);
    if (known && known.revision > revision) return false;
    bucket.known.set(id, { record, revision });
    return true;
  }

  #teamRecord(teamId: string): TeamRecord | undefined {
    if (teamId === this.#o.defaultTeamId) return undefined;
    const t = this.#o.store.exportTeam(teamId);
    return t && { v: TEAM_RECORD_VERSION, teamId, name: t.name, quotas: t.quotas, createdAt: t.createdAt, deletedAt: t.deletedAt };
  }

  #keyRecord(publicId: string): KeyRecord | undefined {
    const k = this.#o.store.exportKey(publicId);
    if (!k || k.role === "instance_admin") return undefined;
    return {
      v: KEY_RECORD_VERSION,
      publicId,
      teamId: k.teamId === this.#o.defaultTeamId ? null : k.teamId,
      name: k.name,
      role: k.role,
      hash: k.hash,
      prefix: k.prefix,
      suffix: k.suffix,
      valueLength: k.valueLength,
      createdAt: k.createdAt,
      revokedAt: k.revokedAt,
    };
  }

  // ---- the buckets to SQLite

  async #watch<R>(bucket: Bucket<R>, apply: (record: R) => void): Promise<void> {
    const watch = await whenClusterAnswers(`watch the ${bucket.what} bucket`, () => bucket.kv.watch({ key: ">" }), { logger: this.#o.logger });
    this.#stops.push(() => watch.stop());
    void (async () => {
      try {
        for await (const entry of watch) this.#apply(bucket, entry, apply);
      } catch (err) {
        if (!this.#closed) this.#o.logger.error({ err, bucket: bucket.what }, "cluster bucket watch ended");
      }
    })();
  }

  #apply<R>(bucket: Bucket<R>, entry: KvEntry, apply: (record: R) => void): void {
    // Records are never deleted (a deletion or revocation is a field): a purge by hand leaves local rows as they are.
    if (entry.operation !== "PUT") return;
    try {
      // A record older than one this node wrote or read is the watch catching up: importing it would undo, for a moment, a change made here.
      if (!this.#know(bucket, entry.key, bucket.decode(entry.value), entry.revision)) return;
      apply(bucket.known.get(entry.key)!.record);
    } catch (err) {
      this.#o.logger.warn({ err, bucket: bucket.what, key: entry.key }, "a cluster record could not be imported");
    }
  }

  #importTeam(r: TeamRecord): void {
    if (r.teamId === this.#o.defaultTeamId) return;
    const snapshot: TeamSnapshot = { teamId: r.teamId, name: r.name, quotas: r.quotas, createdAt: r.createdAt, deletedAt: r.deletedAt };
    if (!this.#o.store.importTeam(snapshot)) {
      this.#o.logger.warn({ teamId: r.teamId, name: r.name }, "a team of another node has the name of a different team here; not imported");
      return;
    }
    const waiting = this.#waiting.get(r.teamId);
    this.#waiting.delete(r.teamId);
    for (const key of waiting?.values() ?? []) this.#importSnapshot(key);
  }

  #importKey(r: KeyRecord): void {
    this.#importSnapshot({
      publicId: r.publicId,
      teamId: r.teamId ?? this.#o.defaultTeamId,
      name: r.name,
      role: r.role,
      hash: r.hash,
      prefix: r.prefix,
      suffix: r.suffix,
      valueLength: r.valueLength,
      createdAt: r.createdAt,
      revokedAt: r.revokedAt,
    });
  }

  #importSnapshot(k: KeySnapshot): void {
    const before = this.#o.store.keyByPublicId(k.publicId);
    const result = this.#o.store.importKey(k);
    if (result === "no_team") {
      const waiting = this.#waiting.get(k.teamId) ?? new Map<string, KeySnapshot>();
      waiting.set(k.publicId, k);
      this.#waiting.set(k.teamId, waiting);
    } else if (result === "conflict") {
      this.#o.logger.warn({ publicId: k.publicId }, "an API key of another node is a different key here (same hash); not imported");
    } else if (before && before.revokedAt === null && k.revokedAt !== null) {
      this.#o.onRevoked?.(before.id);
    }
  }
}
