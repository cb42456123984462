// Teams and API keys as the cluster's buckets hold them (team-sync.ts). Records are versioned and read tolerantly: a
// writer keeps the fields it does not know, so nodes of adjacent versions can share them. A key's record carries the
// stored hash exactly as the team store keeps it, never the key; its team is null for "each node's default team",
// which is per node (made at each node's first start, under its own id).
import { BurrowError, Code } from "@burrow/protocol";
import type { KeySnapshot, TeamSnapshot } from "../teams/team-store.js";

export const TEAM_RECORD_VERSION = 1;
export const KEY_RECORD_VERSION = 1;

/** A team as the store exports it (deletedAt, once set, stays: a deletion wins over a concurrent change). */
export interface TeamRecord extends TeamSnapshot {
  v: number;
}

/** A key as the store exports it (revokedAt, once set, stays: a revocation wins over a concurrent rename). */
export interface KeyRecord extends Omit<KeySnapshot, "teamId"> {
  v: number;
  /** null: the default team of whichever node reads it. */
  teamId: string | null;
}

const bad = (what: string) => new BurrowError(Code.DataLoss, `a ${what} record is incomplete`, { reason: "bad_cluster_record" });

function parse(bytes: Uint8Array): Record<string, unknown> {
  const value = JSON.parse(new TextDecoder().decode(bytes)) as unknown;
  if (!value || typeof value !== "object" || Array.isArray(value)) throw bad("cluster");
  return value as Record<string, unknown>;
}

const numOrNull = (v: unknown) => (typeof v === "number" ? v : null);
const strOrNull = (v: unknown) => (typeof v === "string" ? v : null);

export function decodeTeam(bytes: Uint8Array): TeamRecord {
  const r = parse(bytes);
  if (typeof r["teamId"] !== "string" || typeof r["name"] !== "string" || typeof r["createdAt"] !== "number") throw bad("team");
  const quotas = r["quotas"] && typeof r["quotas"] === "object" ? (r["quotas"] as TeamRecord["quotas"]) : {};
  return { ...r, v: typeof r["v"] === "number" ? r["v"] : 1, teamId: r["teamId"], name: r["name"], quotas, createdAt: r["createdAt"], deletedAt: numOrNull(r["deletedAt"]) };
}

export function decodeKey(bytes: Uint8Array): KeyRecord {
  const r = parse(bytes);
  const { publicId, hash, prefix, name, createdAt } = r;
  if (typeof publicId !== "string" || typeof hash !== "string" || typeof prefix !== "string" || typeof createdAt !== "number") throw bad("key");
  return {
    ...r,
    v: typeof r["v"] === "number" ? r["v"] : 1,
    publicId,
    teamId: strOrNull(r["teamId"]),
    name: typeof name === "string" ? name : "",
    // Only what a team may hold travels; an instance admin is each node's configuration.
    role: r["role"] === "admin" ? "admin" : "member",
    hash,
    prefix,
    suffix: strOrNull(r["suffix"]),
    valueLength: numOrNull(r["valueLength"]),
    createdAt,
    revokedAt: numOrNull(r["revokedAt"]),
  };
}

export function encodeRecord(record: TeamRecord | KeyRecord): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(record));
}

const earliest = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.min(a, b));

/**
 * What a merge keeps of `ours`: with the record this node last knew (`base`), the fields it changed since (three-way:
 * another node's change of another field is kept); without one, all of them; "stored" (a start's push of what may be
 * older), none that the stored record has.
 */
export type MergeBase<R> = R | undefined | "stored";

function changes<R extends object>(stored: R, ours: R, base: MergeBase<R>): R {
  if (base === "stored") return { ...ours, ...stored };
  if (base === undefined) return { ...stored, ...ours };
  const was = base as unknown as Record<string, unknown>;
  const out = { ...stored } as Record<string, unknown>;
  for (const [field, value] of Object.entries(ours)) if (JSON.stringify(value) !== JSON.stringify(was[field])) out[field] = value;
  return out as unknown as R;
}

/** The record to write over `stored`; a deletion, once made anywhere, stays. */
export function mergeTeam(stored: TeamRecord, ours: TeamRecord, base: MergeBase<TeamRecord>): TeamRecord {
  return { ...changes(stored, ours, base), deletedAt: earliest(stored.deletedAt, ours.deletedAt) };
}

/** The record to write over `stored`; a revocation, once made anywhere, stays. */
export function mergeKey(stored: KeyRecord, ours: KeyRecord, base: MergeBase<KeyRecord>): KeyRecord {
  return { ...changes(stored, ours, base), revokedAt: earliest(stored.revokedAt, ours.revokedAt) };
}

/** Whether two records say the same (field order aside). */
export function sameRecord(a: object, b: object): boolean {
  const canonical = (o: object) => JSON.stringify(Object.entries(o).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)));
  return canonical(a) === canonical(b);
}
