// Filters, ordering and cursors of the sandbox lists, matching infra's semantics.
import { BurrowError, Code } from "@burrow/protocol";
import type { SandboxRow, SandboxRowState } from "../../store/sandboxes.js";

/** Go's url.QueryUnescape: `+` is a space, malformed escapes are an error. */
function queryUnescape(value: string): string {
  try {
    return decodeURIComponent(value.replace(/\+/g, " "));
  } catch {
    throw new BurrowError(Code.InvalidArgument, "invalid metadata filter: malformed percent-encoding");
  }
}

/**
 * Decode the `metadata` filter. The SDK percent-encodes keys and values, joins them like a query string and the
 * HTTP client encodes that string once more, so after the framework's own decoding: unescape the whole string,
 * split on `&` then `=` (exactly two parts), and unescape each key and value.
 */
export function parseMetadataFilter(raw: string | undefined): Record<string, string> {
  if (raw === undefined || raw === "") return {};
  const filter: Record<string, string> = {};
  for (const pair of queryUnescape(raw).split("&")) {
    const parts = pair.split("=");
    if (parts.length !== 2) throw new BurrowError(Code.InvalidArgument, `invalid metadata filter: "${pair}" is not key=value`);
    filter[queryUnescape(parts[0]!)] = queryUnescape(parts[1]!);
  }
  return filter;
}

/** `state` arrives comma-separated (form style, explode=false) and possibly repeated. */
export function parseStates(raw: readonly string[] | undefined): SandboxRowState[] | undefined {
  if (!raw || raw.length === 0) return undefined;
  const states = raw.flatMap((s) => s.split(",")).map((s) => s.trim()).filter((s) => s !== "");
  for (const s of states) {
    if (s !== "running" && s !== "paused") throw new BurrowError(Code.InvalidArgument, `invalid state "${s}"; expected running or paused`);
  }
  return states.length ? (states as SandboxRowState[]) : undefined;
}

export function parseStartedAfter(raw: string | undefined): Date | undefined {
  if (raw === undefined || raw === "") return undefined;
  const date = new Date(raw);
  if (Number.isNaN(date.getTime())) throw new BurrowError(Code.InvalidArgument, `invalid startedAfter "${raw}"; expected an RFC 3339 time`);
  return date;
}

export interface SandboxFilter {
  metadata: Record<string, string>;
  states?: SandboxRowState[];
  /** Template ids and aliases that match. */
  templates?: Set<string>;
  startedAfter?: Date;
}

export function matches(row: SandboxRow, f: SandboxFilter): boolean {
  if (f.states && !f.states.includes(row.state)) return false;
  if (f.templates && !f.templates.has(row.templateId) && !(row.alias !== null && f.templates.has(row.alias))) return false;
  if (f.startedAfter && row.startedAt < f.startedAfter) return false;
  for (const [key, value] of Object.entries(f.metadata)) {
    if (row.metadata[key] !== value) return false;
  }
  return true;
}

export type Order = "asc" | "desc";

/** Sort key: startedAt, then id to break ties so that pages never overlap or skip. */
function compare(a: { t: number; id: string }, b: { t: number; id: string }): number {
  return a.t - b.t || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

const key = (row: SandboxRow) => ({ t: row.startedAt.getTime(), id: row.sandboxId });

export function sortRows(rows: SandboxRow[], order: Order): SandboxRow[] {
  const sign = order === "asc" ? 1 : -1;
  return [...rows].sort((a, b) => sign * compare(key(a), key(b)));
}

/** Opaque cursor: base64url of `<startedAt ms>__<sandboxId>` of the last row served. */
export function encodeCursor(row: SandboxRow): string {
  return Buffer.from(`${row.startedAt.getTime()}__${row.sandboxId}`, "utf8").toString("base64url");
}

export function decodeCursor(token: string): { t: number; id: string } {
  const [t, id, extra] = Buffer.from(token, "base64url").toString("utf8").split("__");
  const time = Number(t);
  if (extra !== undefined || !id || !Number.isSafeInteger(time)) throw new BurrowError(Code.InvalidArgument, "invalid nextToken");
  return { t: time, id };
}

/** Rows after the cursor in the given order (the input must already be sorted that way). */
export function afterCursor(sorted: SandboxRow[], cursor: { t: number; id: string }, order: Order): SandboxRow[] {
  const sign = order === "asc" ? 1 : -1;
  return sorted.filter((row) => sign * compare(key(row), cursor) > 0);
}
