// A team's admissions under way on every node and its starts in the last minute, one record per team in the
// `burrow_team_quotas` bucket, so that a team's limits hold exactly across the cluster. What the owner records say
// (team-usage.ts) comes a moment after a create; two nodes admitting at the same instant would each miss the other's.
// Here a node admits by adding a hold to the team's record with a revision-checked write, its check made against the
// record it read: of two nodes writing at once one fails the revision check, reads again, sees the other's hold and
// judges with it. A hold ends when its request answers: removed when nothing was made, else kept naming the sandboxes
// it made until the other nodes' mirrors count them (their owner records with facts), so no moment counts none.
// Holds whose node is down, or that outlived any create, count no more and are dropped at the next write. A create
// placed on another node carries its hold's id (quota-hold.ts): the receiving node takes the hold over in the same
// write that adds its own, so the create is counted once, and puts it back if it makes nothing (the placing node
// then passes the create on, or makes it itself, still holding its place). Only teams with a limit these counts
// serve take part: for the others admission makes no round trip.
//
// The write is a checked read-modify-write (checkedUpdate, cluster-kv.ts), not the KV's revision-checked update: on a
// replicated stream nats-server before 2.9.21 could take two writes naming one revision (seen here: a team's limit of
// 2 passed by 3 on a 3-server cluster).
import { randomBytes } from "node:crypto";
import type { KV } from "@nats-io/kv";
import type { Logger } from "pino";
import { clusterError } from "./cluster-errors.js";
import { checkedUpdate } from "./cluster-kv.js";

export const LEDGER_VERSION = 1;

/** Starts count against the create rate for this long. */
export const STARTS_WINDOW_MS = 60_000;
/** An unsettled hold is dropped after this: no create takes so long, its node lost its NATS or died. */
const UNSETTLED_MS = 10 * 60_000;
/** A settled hold is dropped after this: every node's mirror has its sandboxes' records by then. */
const SETTLED_MS = 30_000;
/** A settled sandbox no mirror has a record of after this has ended (or its record was never written). */
export const RECORD_GRACE_MS = 5_000;
/** A handed hold put back counts at most this long (its node settles it when its create answers). */
const RESTORED_MS = 2 * 60_000;

/** What a hold counts. */
export interface Held {
  sandboxes: number;
  vcpu: number;
  memoryMB: number;
  diskMB: number;
  builds: number;
}

export const NOTHING_HELD: Readonly<Held> = Object.freeze({ sandboxes: 0, vcpu: 0, memoryMB: 0, diskMB: 0, builds: 0 });

export interface Hold extends Held {
  node: string;
  /** Unix ms (the writing node's clock) when it was taken, and until when it counts. */
  at: number;
  until: number;
  /** Once its request answered: the sandboxes it made. */
  sandboxIds?: string[];
  settledAt?: number;
  /** The placing node's hold this one took over (put back if nothing is made here: the placing node goes on). */
  handed?: { id: string; hold: Hold };
}

export interface LedgerRecord {
  v: number;
  holds: Record<string, Hold>;
  /** [node, unix ms, count] of the starts of the last minute. */
  starts: Array<[string, number, number]>;
  /** MiB of the team's volumes on each node (volumes are node-local; each node writes its own figure). */
  volumes: Record<string, number>;
}

/** What the record holds beyond the owner records' usage, for a check. */
export interface LedgerView {
  held: Held;
  starts: number;
  /** MiB of the team's volumes on the other nodes that are up (this node's are its store's). */
  volumesMB: number;
}

export interface LedgerHold {
  readonly id: string;
  /**
   * End the hold: with the sandboxes it made (kept until other nodes count them) or none (removed); `volumesMB`: this
   * node's volumes of the team now, written in the same write (a volume's create). Never throws.
   */
  settle(sandboxIds: readonly string[], volumesMB?: number): Promise<void>;
}

export interface TeamLedgerDeps {
  kv: KV;
  nodeName: string;
  isUp: (node: string) => boolean;
  /**
   * Whether a sandbox a settled hold names is counted by the usage holds are added to (or has ended), so that the
   * hold no longer counts it.
   */
  counted: (sandboxId: string, hold: Hold, now: number) => boolean;
  logger: Logger;
  now?: () => number;
}

export class TeamLedger {
  readonly #d: TeamLedgerDeps;

  constructor(deps: TeamLedgerDeps) {
    this.#d = deps;
  }

  /**
   * Add a hold of `held` (and `starts` starts) to `team`'s record once `check` passes against what the record holds
   * besides (without `takeOver`, which the same write removes: a placed create's hold at the placing node). `check`
   * throws to refuse; it may run more than once (each time the record changed meanwhile). `ttlMs`: how long an
   * unsettled hold counts at most (a build's runs long).
   */
  async reserve(
    team: string,
    held: Held,
    starts: number,
    check: (view: LedgerView) => void,
    options: { takeOver?: string | undefined; ttlMs?: number | undefined; signal?: AbortSignal | undefined } = {},
  ): Promise<LedgerHold> {
    const id = randomBytes(9).toString("hex");
    const { takeOver, signal } = options;
    await this.#change(team, signal, (record, now) => {
      const handed = takeOver !== undefined ? record.holds[takeOver] : undefined;
      if (takeOver !== undefined) delete record.holds[takeOver];
      check(this.#view(record, now));
      record.holds[id] = { node: this.#d.nodeName, ...held, at: now, until: now + (options.ttlMs ?? UNSETTLED_MS), ...(handed && takeOver !== undefined ? { handed: { id: takeOver, hold: handed } } : {}) };
      if (starts > 0) record.starts.push([this.#d.nodeName, now, starts]);
      return true;
    });
    return {
      id,
      settle: async (sandboxIds, volumesMB) => {
        try {
          await this.#change(team, undefined, (record, now) => {
            if (volumesMB !== undefined) setVolumes(record, this.#d.nodeName, volumesMB);
            const hold = record.holds[id];
            if (!hold) return volumesMB !== undefined;
            const { handed, ...own } = hold;
            if (sandboxIds.length > 0) record.holds[id] = { ...own, sandboxIds: [...sandboxIds], settledAt: now, until: now + SETTLED_MS };
            else {
              delete record.holds[id];
              // Made nothing here: the placing node passes the create on (or makes it itself) under its own hold.
              if (handed && record.holds[handed.id] === undefined) record.holds[handed.id] = { ...handed.hold, until: Math.min(handed.hold.until, now + RESTORED_MS) };
            }
            return true;
          });
        } catch (err) {
          // Left as it is, the hold counts until it expires: a refusal too many for a while, never one too few.
          this.#d.logger.warn({ err, team, hold: id }, "could not settle a team's quota hold");
        }
      },
    };
  }

  /** Write this node's figure of `team`'s volumes (after a volume is deleted, and at start). Never throws. */
  async setVolumes(team: string, volumesMB: number): Promise<void> {
    try {
      await this.#change(team, undefined, (record) => {
        if ((record.volumes[this.#d.nodeName] ?? 0) === volumesMB) return false;
        setVolumes(record, this.#d.nodeName, volumesMB);
        return true;
      });
    } catch (err) {
      this.#d.logger.warn({ err, team }, "could not write this node's volumes of a team into its quota record");
    }
  }

  /** What `team`'s record holds now (for a check outside an admission, and tests). */
  async view(team: string): Promise<LedgerView> {
    return this.#view(await this.record(team), this.#now());
  }

  /** `team`'s record as stored. */
  async record(team: string): Promise<LedgerRecord> {
    const entry = await this.#d.kv.get(team);
    return entry?.operation === "PUT" ? decode(entry.value) : empty();
  }

  #view(record: LedgerRecord, now: number): LedgerView {
    const held = { ...NOTHING_HELD };
    for (const hold of Object.values(record.holds)) {
      if (!this.#alive(hold, now)) continue;
      // A settled hold counts each of its sandboxes (its share) until the usage counts it.
      let share = 1;
      if (hold.sandboxIds !== undefined) {
        const uncounted = hold.sandboxIds.filter((sandboxId) => !this.#d.counted(sandboxId, hold, now)).length;
        share = hold.sandboxes > 0 ? uncounted / hold.sandboxes : 0;
      }
      held.sandboxes += hold.sandboxes * share;
      held.vcpu += hold.vcpu * share;
      held.memoryMB += hold.memoryMB * share;
      held.diskMB += hold.diskMB * share;
      held.builds += hold.builds;
    }
    const since = now - STARTS_WINDOW_MS;
    const starts = record.starts.reduce((sum, [, at, count]) => (at > since ? sum + count : sum), 0);
    let volumesMB = 0;
    for (const [node, mb] of Object.entries(record.volumes)) if (node !== this.#d.nodeName && this.#d.isUp(node)) volumesMB += mb;
    return { held, starts, volumesMB };
  }

  #alive(hold: Hold, now: number): boolean {
    return hold.until > now && (hold.node === this.#d.nodeName || this.#d.isUp(hold.node));
  }

  /** Read, change and write `team`'s record in one checked read-modify-write (made again while others write first). */
  async #change(team: string, signal: AbortSignal | undefined, change: (record: LedgerRecord, now: number) => boolean): Promise<void> {
    // A refusal thrown by `change` (a check) reaches the caller as it is; NATS failures as cluster errors.
    let refusal: unknown;
    try {
      await checkedUpdate(
        this.#d.kv,
        team,
        (entry) => {
          const now = this.#now();
          const record = entry?.operation === "PUT" ? decode(entry.value) : empty();
          this.#prune(record, now);
          try {
            return change(record, now) ? encode(record) : undefined;
          } catch (err) {
            refusal = err;
            throw err;
          }
        },
        { signal },
      );
    } catch (err) {
      if (err === refusal) throw err;
      throw clusterError(err, `write team ${team}'s quota record`);
    }
  }

  #prune(record: LedgerRecord, now: number): void {
    for (const [id, hold] of Object.entries(record.holds)) if (!this.#alive(hold, now)) delete record.holds[id];
    const since = now - STARTS_WINDOW_MS;
    record.starts = record.starts.filter(([, at]) => at > since);
  }

  #now(): number {
    return this.#d.now?.() ?? Date.now();
  }
}

function empty(): LedgerRecord {
  return { v: LEDGER_VERSION, holds: {}, starts: [], volumes: {} };
}

function setVolumes(record: LedgerRecord, node: string, volumesMB: number): void {
  if (volumesMB > 0) record.volumes[node] = volumesMB;
  else delete record.volumes[node];
}

function decode(bytes: Uint8Array): LedgerRecord {
  const value = JSON.parse(new TextDecoder().decode(bytes)) as Partial<LedgerRecord> & Record<string, unknown>;
  // Fields of newer versions are kept for the next writer.
  return { ...value, v: Math.max(value.v ?? 1, LEDGER_VERSION), holds: value.holds ?? {}, starts: value.starts ?? [], volumes: value.volumes ?? {} };
}

function encode(record: LedgerRecord): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(record));
}
