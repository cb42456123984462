// Who did what: every action that creates, ends or changes a sandbox, template, snapshot, checkpoint, key or team
// is a row in audit_log (queryable, team-scoped) and an event on the bus at `audit.<teamId>.<action>`.
import type { Bus } from "@burrow/bus";
import type { Logger } from "pino";
import type { Db } from "../store/database.js";
import { AUDIT_SUBJECT_ROOT } from "./ownership.js";

export interface AuditEntry {
  seq: number;
  at: Date;
  teamId: string | null;
  keyId: string | null;
  action: string;
  resourceKind: string;
  resourceId: string;
  detail?: Record<string, unknown> | undefined;
}

export type NewAuditEntry = Omit<AuditEntry, "seq" | "at">;

interface Row {
  seq: number;
  at: number;
  team_id: string | null;
  key_id: string | null;
  action: string;
  resource_kind: string;
  resource_id: string;
  detail: string | null;
}

const MAX_LIMIT = 1000;

export class AuditLog {
  readonly #db: Db;
  readonly #bus: Bus | undefined;
  readonly #logger: Logger;

  constructor(deps: { db: Db; bus?: Bus | undefined; logger: Logger }) {
    this.#db = deps.db;
    this.#bus = deps.bus;
    this.#logger = deps.logger;
  }

  record(entry: NewAuditEntry, now = new Date()): AuditEntry {
    const detail = entry.detail && Object.keys(entry.detail).length > 0 ? JSON.stringify(entry.detail) : null;
    const { lastInsertRowid } = this.#db
      .prepare("INSERT INTO audit_log (at, team_id, key_id, action, resource_kind, resource_id, detail) VALUES (?, ?, ?, ?, ?, ?, ?)")
      .run(now.getTime(), entry.teamId, entry.keyId, entry.action, entry.resourceKind, entry.resourceId, detail);
    const saved: AuditEntry = { ...entry, seq: Number(lastInsertRowid), at: now };
    if (this.#bus) {
      const subject = `${AUDIT_SUBJECT_ROOT}.${entry.teamId ?? "none"}.${entry.action}`;
      // The log is the record; the event is a notification, and a bus hiccup must not fail the action.
      this.#bus.publish(subject, new TextEncoder().encode(JSON.stringify(toWire(saved)))).catch((err: unknown) => {
        this.#logger.warn({ err, subject }, "could not publish audit event");
      });
    }
    return saved;
  }

  /** Newest first. `teamId` undefined: every team's (the instance admin). */
  query(opts: { teamId?: string | undefined; limit?: number | undefined; since?: Date | undefined }): AuditEntry[] {
    const limit = Math.min(Math.max(opts.limit ?? 100, 1), MAX_LIMIT);
    const since = opts.since?.getTime() ?? 0;
    const rows =
      opts.teamId === undefined
        ? this.#db.prepare<[number, number], Row>("SELECT * FROM audit_log WHERE at >= ? ORDER BY seq DESC LIMIT ?").all(since, limit)
        : this.#db
            .prepare<[string, number, number], Row>("SELECT * FROM audit_log WHERE team_id = ? AND at >= ? ORDER BY seq DESC LIMIT ?")
            .all(opts.teamId, since, limit);
    return rows.map((r) => ({
      seq: r.seq,
      at: new Date(r.at),
      teamId: r.team_id,
      keyId: r.key_id,
      action: r.action,
      resourceKind: r.resource_kind,
      resourceId: r.resource_id,
      ...(r.detail ? { detail: JSON.parse(r.detail) as Record<string, unknown> } : {}),
    }));
  }
}

/** An entry as the API and the bus show it. */
export function toWire(e: AuditEntry): Record<string, unknown> {
  return {
    seq: e.seq,
    timestamp: e.at.toISOString(),
    teamID: e.teamId,
    keyID: e.keyId,
    action: e.action,
    resourceKind: e.resourceKind,
    resourceID: e.resourceId,
    ...(e.detail ? { detail: e.detail } : {}),
  };
}
