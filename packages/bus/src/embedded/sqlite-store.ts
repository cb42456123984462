import Database from "better-sqlite3";
import { BurrowError, Code } from "@burrow/protocol";
import { assertSubject, matchTokens } from "../subject.js";
import { DEFAULT_DUPLICATE_WINDOW_MS, redeliveryDelayMs } from "../names.js";
import { DLQ_STREAM, deadLetterHeaders, deadLetterSubject, type DeadLetterReason } from "../dead-letter.js";
import type { ConsumerConfig, StreamConfig } from "../types.js";

export interface StoredMsg {
  stream: string;
  seq: number;
  subject: string;
  headers: Record<string, string>;
  data: Uint8Array;
  msgId: string | undefined;
  ts: number;
}

export interface Claimed extends StoredMsg {
  deliveries: number;
}

interface StreamState {
  cfg: StreamConfig;
  patterns: string[][];
  lastSeq: number;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS streams (name TEXT PRIMARY KEY, config TEXT NOT NULL, last_seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS messages (
  stream TEXT NOT NULL, seq INTEGER NOT NULL, subject TEXT NOT NULL, headers TEXT, data BLOB NOT NULL,
  msg_id TEXT, ts INTEGER NOT NULL, PRIMARY KEY (stream, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS dedup (stream TEXT NOT NULL, msg_id TEXT NOT NULL, seq INTEGER NOT NULL, ts INTEGER NOT NULL,
  PRIMARY KEY (stream, msg_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS consumers (stream TEXT NOT NULL, durable TEXT NOT NULL, config TEXT NOT NULL, cursor INTEGER NOT NULL,
  PRIMARY KEY (stream, durable)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pending (stream TEXT NOT NULL, durable TEXT NOT NULL, seq INTEGER NOT NULL, deliveries INTEGER NOT NULL,
  visible_at INTEGER NOT NULL, PRIMARY KEY (stream, durable, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS kv_buckets (bucket TEXT PRIMARY KEY, ttl_ms INTEGER, revision INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS kv (bucket TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL, revision INTEGER NOT NULL,
  ts INTEGER NOT NULL, PRIMARY KEY (bucket, key)) WITHOUT ROWID;
`;

/** A stored message's size for max bytes: subject, headers and data, as JetStream counts them (less its framing). */
const MSG_BYTES = (row: string) => `(octet_length(${row}.subject) + COALESCE(octet_length(${row}.headers), 0) + length(${row}.data))`;

/**
 * Each stream's stored bytes, kept by triggers so that every insert and delete (publish, age and count limits,
 * work-queue acks, another handle on the same file) is counted without a scan. Databases from before the column
 * are counted once when first opened.
 */
function ensureByteCounts(db: Database.Database): void {
  db.transaction(() => {
    const cols = db.prepare("PRAGMA table_info(streams)").all() as { name: string }[];
    if (!cols.some((c) => c.name === "bytes")) {
      db.exec("ALTER TABLE streams ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0");
      db.exec(`UPDATE streams SET bytes = (SELECT COALESCE(SUM(${MSG_BYTES("m")}), 0) FROM messages m WHERE m.stream = streams.name)`);
    }
    db.exec(`
      CREATE TRIGGER IF NOT EXISTS messages_bytes_insert AFTER INSERT ON messages BEGIN
        UPDATE streams SET bytes = bytes + ${MSG_BYTES("NEW")} WHERE name = NEW.stream;
      END;
      CREATE TRIGGER IF NOT EXISTS messages_bytes_delete AFTER DELETE ON messages BEGIN
        UPDATE streams SET bytes = bytes - ${MSG_BYTES("OLD")} WHERE name = OLD.stream;
      END;`);
  }).immediate();
}

/**
 * SQLite persistence for the embedded bus: streams, durable consumer positions and pending deliveries, KV.
 * One connection, WAL, and every multi-row change in one transaction, so a crash never leaves a message
 * both acknowledged and pending, or dead-lettered and still deliverable.
 */
export class SqliteStore {
  readonly db: Database.Database;
  private readonly streams = new Map<string, StreamState>();
  private readonly st: ReturnType<SqliteStore["prepare"]>;
  private lastPrune = 0;
  private lastRefresh = 0;

  constructor(path: string) {
    this.db = new Database(path);
    this.db.pragma("journal_mode = WAL");
    // NORMAL in WAL mode: a power cut may lose the last transactions but never corrupts; a process crash loses nothing.
    this.db.pragma("synchronous = NORMAL");
    this.db.pragma("busy_timeout = 5000");
    this.db.exec(SCHEMA);
    ensureByteCounts(this.db);
    this.st = this.prepare();
    this.refresh();
  }

  /** Re-reads the stream list: another handle on the same file may have created streams since. */
  private refresh(): void {
    this.lastRefresh = Date.now();
    this.streams.clear();
    for (const row of this.db.prepare("SELECT name, config, last_seq FROM streams").all() as { name: string; config: string; last_seq: number }[]) {
      const cfg = JSON.parse(row.config) as StreamConfig;
      this.streams.set(row.name, { cfg, patterns: cfg.subjects.map((s) => s.split(".")), lastSeq: row.last_seq });
    }
  }

  private prepare() {
    const db = this.db;
    return {
      insertMsg: db.prepare("INSERT INTO messages (stream, seq, subject, headers, data, msg_id, ts) VALUES (?, ?, ?, ?, ?, ?, ?)"),
      setLastSeq: db.prepare("UPDATE streams SET last_seq = ? WHERE name = ?"),
      getLastSeq: db.prepare("SELECT last_seq FROM streams WHERE name = ?"),
      getDedup: db.prepare("SELECT seq, ts FROM dedup WHERE stream = ? AND msg_id = ?"),
      putDedup: db.prepare("INSERT OR REPLACE INTO dedup (stream, msg_id, seq, ts) VALUES (?, ?, ?, ?)"),
      getMsg: db.prepare("SELECT stream, seq, subject, headers, data, msg_id, ts FROM messages WHERE stream = ? AND seq = ?"),
      scanMsgs: db.prepare("SELECT seq, subject FROM messages WHERE stream = ? AND seq > ? ORDER BY seq LIMIT ?"),
      delMsg: db.prepare("DELETE FROM messages WHERE stream = ? AND seq = ?"),
      getBytes: db.prepare("SELECT bytes FROM streams WHERE name = ?"),
      oldestSizes: db.prepare(`SELECT seq, ${MSG_BYTES("messages")} AS size FROM messages WHERE stream = ? ORDER BY seq`),
      delThrough: db.prepare("DELETE FROM messages WHERE stream = ? AND seq <= ?"),
      getConsumer: db.prepare("SELECT config, cursor FROM consumers WHERE stream = ? AND durable = ?"),
      putConsumer: db.prepare("INSERT INTO consumers (stream, durable, config, cursor) VALUES (?, ?, ?, ?) ON CONFLICT (stream, durable) DO UPDATE SET config = excluded.config"),
      setCursor: db.prepare("UPDATE consumers SET cursor = ? WHERE stream = ? AND durable = ?"),
      dueRedelivery: db.prepare("SELECT seq, deliveries FROM pending WHERE stream = ? AND durable = ? AND visible_at <= ? ORDER BY seq LIMIT 1"),
      nextVisible: db.prepare("SELECT MIN(visible_at) AS t FROM pending WHERE stream = ? AND durable = ?"),
      getPending: db.prepare("SELECT deliveries FROM pending WHERE stream = ? AND durable = ? AND seq = ?"),
      putPending: db.prepare("INSERT OR REPLACE INTO pending (stream, durable, seq, deliveries, visible_at) VALUES (?, ?, ?, ?, ?)"),
      setVisible: db.prepare("UPDATE pending SET visible_at = ? WHERE stream = ? AND durable = ? AND seq = ?"),
      delPending: db.prepare("DELETE FROM pending WHERE stream = ? AND durable = ? AND seq = ?"),
      countPending: db.prepare("SELECT COUNT(*) AS n FROM pending WHERE stream = ? AND durable = ?"),
    };
  }

  close(): void {
    this.db.close();
  }

  // ---- streams ----

  ensureStream(cfg: StreamConfig): void {
    const patterns = cfg.subjects.map((s) => assertSubject(s, true));
    for (const [name, other] of this.streams) {
      if (name === cfg.name) continue;
      for (const p of patterns) for (const q of other.patterns) {
        if (overlaps(p, q)) throw new BurrowError(Code.InvalidArgument, `subjects of stream "${cfg.name}" overlap stream "${name}"`);
      }
    }
    const prev = this.streams.get(cfg.name);
    const lastSeq = prev?.lastSeq ?? 0;
    this.db.transaction(() => {
      this.db.prepare("INSERT INTO streams (name, config, last_seq) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET config = excluded.config")
        .run(cfg.name, JSON.stringify(cfg), lastSeq);
      // A lowered cap applies at once, as JetStream applies a stream update.
      this.enforceMaxBytes(cfg.name, cfg.maxBytes);
    })();
    this.streams.set(cfg.name, { cfg, patterns, lastSeq });
  }

  /**
   * Discards the oldest messages until the stream fits in `maxBytes` (JetStream's discard "old"). Runs inside the
   * transaction that stored the message, so readers never see the stream over its cap.
   */
  private enforceMaxBytes(stream: string, maxBytes: number | undefined): void {
    if (!maxBytes || maxBytes <= 0) return;
    const bytes = (this.st.getBytes.get(stream) as { bytes: number } | undefined)?.bytes ?? 0;
    let excess = bytes - maxBytes;
    if (excess <= 0) return;
    let through = 0;
    for (const r of this.st.oldestSizes.iterate(stream) as Iterable<{ seq: number; size: number }>) {
      through = r.seq;
      excess -= r.size;
      if (excess <= 0) break;
    }
    if (through > 0) this.st.delThrough.run(stream, through);
  }

  /** Bytes the stream holds now, as max bytes counts them. */
  streamBytes(stream: string): number {
    return (this.st.getBytes.get(stream) as { bytes: number } | undefined)?.bytes ?? 0;
  }

  deleteStream(name: string): void {
    if (!this.known(name)) throw new BurrowError(Code.NotFound, `stream "${name}" not found`);
    this.db.transaction(() => {
      for (const t of ["streams", "messages", "dedup", "consumers", "pending"]) {
        this.db.prepare(`DELETE FROM ${t} WHERE ${t === "streams" ? "name" : "stream"} = ?`).run(name);
      }
    })();
    this.streams.delete(name);
  }

  streamConfig(name: string): StreamConfig | undefined {
    return this.known(name)?.cfg;
  }

  private known(name: string): StreamState | undefined {
    const s = this.streams.get(name);
    if (s) return s;
    this.refresh();
    return this.streams.get(name);
  }

  /** The stream storing this subject, if any (stream subjects never overlap). */
  streamFor(subjectTokens: readonly string[]): string | undefined {
    for (const [name, s] of this.streams) {
      for (const p of s.patterns) if (matchTokens(p, subjectTokens)) return name;
    }
    // A miss may mean another handle created the stream; look again, at most once a second.
    if (Date.now() - this.lastRefresh > 1000) {
      this.refresh();
      for (const [name, s] of this.streams) for (const p of s.patterns) if (matchTokens(p, subjectTokens)) return name;
    }
    return undefined;
  }

  hasStreams(): boolean {
    return this.streams.size > 0;
  }

  /** Stores a message; a msg-id seen inside the duplicate window returns the first copy's sequence. */
  append(stream: string, subject: string, headers: Record<string, string>, data: Uint8Array, msgId: string | undefined, now: number): { seq: number; duplicate: boolean } {
    return this.db.transaction(() => this.appendTx(stream, subject, headers, data, msgId, now))();
  }

  private appendTx(stream: string, subject: string, headers: Record<string, string>, data: Uint8Array, msgId: string | undefined, now: number): { seq: number; duplicate: boolean } {
    const s = this.known(stream);
    if (!s) throw new BurrowError(Code.NotFound, `stream "${stream}" not found`);
    if (msgId !== undefined) {
      const d = this.st.getDedup.get(stream, msgId) as { seq: number; ts: number } | undefined;
      const window = s.cfg.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS;
      if (d && d.ts > now - window) return { seq: d.seq, duplicate: true };
    }
    // Read, not cached: another handle on the file may have appended.
    const seq = (this.st.getLastSeq.get(stream) as { last_seq: number }).last_seq + 1;
    const hdr = Object.keys(headers).length > 0 ? JSON.stringify(headers) : null;
    this.st.insertMsg.run(stream, seq, subject, hdr, data, msgId ?? null, now);
    this.st.setLastSeq.run(seq, stream);
    if (msgId !== undefined) this.st.putDedup.run(stream, msgId, seq, now);
    this.enforceMaxBytes(stream, s.cfg.maxBytes);
    s.lastSeq = seq;
    return { seq, duplicate: false };
  }

  /** Applies max age, max messages and the duplicate window (max bytes is applied on every append). Cheap enough to call often; runs at most once a second. */
  prune(now: number): void {
    if (now - this.lastPrune < 1000) return;
    this.lastPrune = now;
    this.db.transaction(() => {
      for (const [name, s] of this.streams) {
        if (s.cfg.maxAgeMs) this.db.prepare("DELETE FROM messages WHERE stream = ? AND ts < ?").run(name, now - s.cfg.maxAgeMs);
        if (s.cfg.maxMsgs) this.db.prepare("DELETE FROM messages WHERE stream = ? AND seq <= ?").run(name, (this.st.getLastSeq.get(name) as { last_seq: number }).last_seq - s.cfg.maxMsgs);
        this.db.prepare("DELETE FROM dedup WHERE stream = ? AND ts < ?").run(name, now - (s.cfg.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS));
      }
    })();
  }

  // ---- reads and deletes for operators (no consumer is created or moved) ----

  streamNames(): string[] {
    this.refresh();
    return [...this.streams.keys()].sort();
  }

  streamInfo(name: string, subjectsFilter: string | undefined): { messages: number; bytes: number; lastSeq: number; subjects?: Record<string, number> } {
    const s = this.known(name);
    if (!s) throw new BurrowError(Code.NotFound, `stream "${name}" not found`);
    const messages = (this.db.prepare("SELECT COUNT(*) AS n FROM messages WHERE stream = ?").get(name) as { n: number }).n;
    const lastSeq = (this.st.getLastSeq.get(name) as { last_seq: number }).last_seq;
    const out: { messages: number; bytes: number; lastSeq: number; subjects?: Record<string, number> } = { messages, bytes: this.streamBytes(name), lastSeq };
    if (subjectsFilter !== undefined) {
      const filter = assertSubject(subjectsFilter, true);
      const subjects: Record<string, number> = {};
      for (const r of this.db.prepare("SELECT subject, COUNT(*) AS n FROM messages WHERE stream = ? GROUP BY subject").iterate(name) as Iterable<{ subject: string; n: number }>) {
        if (matchTokens(filter, r.subject.split("."))) subjects[r.subject] = r.n;
      }
      out.subjects = subjects;
    }
    return out;
  }

  consumerInfos(stream: string): { durable: string; numPending: number; numAckPending: number }[] {
    if (!this.known(stream)) throw new BurrowError(Code.NotFound, `stream "${stream}" not found`);
    const rows = this.db.prepare("SELECT durable, config FROM consumers WHERE stream = ? ORDER BY durable").all(stream) as { durable: string; config: string }[];
    return rows.map((r) => ({ durable: r.durable, ...this.consumerInfo(stream, JSON.parse(r.config) as ConsumerConfig) }));
  }

  /** The first stored message at or after `fromSeq` whose subject matches `subject`. */
  readMessage(stream: string, fromSeq: number, subject: string | undefined): StoredMsg | undefined {
    if (!this.known(stream)) throw new BurrowError(Code.NotFound, `stream "${stream}" not found`);
    const filter = subject === undefined ? undefined : assertSubject(subject, true);
    let after = Math.max(0, fromSeq - 1);
    for (;;) {
      const rows = this.st.scanMsgs.all(stream, after, 64) as { seq: number; subject: string }[];
      if (rows.length === 0) return undefined;
      for (const r of rows) {
        after = r.seq;
        if (!filter || matchTokens(filter, r.subject.split("."))) return this.load(stream, r.seq);
      }
    }
  }

  /** Deletes one stored message and any delivery of it still pending. */
  deleteMessage(stream: string, seq: number): boolean {
    if (!this.known(stream)) throw new BurrowError(Code.NotFound, `stream "${stream}" not found`);
    return this.db.transaction(() => {
      this.db.prepare("DELETE FROM pending WHERE stream = ? AND seq = ?").run(stream, seq);
      return this.st.delMsg.run(stream, seq).changes > 0;
    })();
  }

  purge(stream: string, subject: string | undefined): number {
    if (!this.known(stream)) throw new BurrowError(Code.NotFound, `stream "${stream}" not found`);
    const filter = subject === undefined ? undefined : assertSubject(subject, true);
    return this.db.transaction(() => {
      let n = 0;
      const rows = this.db.prepare("SELECT seq, subject FROM messages WHERE stream = ?").all(stream) as { seq: number; subject: string }[];
      for (const r of rows) {
        if (filter && !matchTokens(filter, r.subject.split("."))) continue;
        this.db.prepare("DELETE FROM pending WHERE stream = ? AND seq = ?").run(stream, r.seq);
        n += this.st.delMsg.run(stream, r.seq).changes;
      }
      return n;
    })();
  }

  private load(stream: string, seq: number): StoredMsg | undefined {
    const r = this.st.getMsg.get(stream, seq) as
      | { stream: string; seq: number; subject: string; headers: string | null; data: Buffer; msg_id: string | null; ts: number }
      | undefined;
    if (!r) return undefined;
    return {
      stream: r.stream,
      seq: r.seq,
      subject: r.subject,
      headers: r.headers ? (JSON.parse(r.headers) as Record<string, string>) : {},
      data: r.data,
      msgId: r.msg_id ?? undefined,
      ts: r.ts,
    };
  }

  // ---- consumers ----

  ensureConsumer(stream: string, cfg: ConsumerConfig): void {
    const s = this.known(stream);
    if (!s) throw new BurrowError(Code.NotFound, `stream "${stream}" not found`);
    if (cfg.filterSubject !== undefined) assertSubject(cfg.filterSubject, true);
    const existing = this.st.getConsumer.get(stream, cfg.durable) as { cursor: number } | undefined;
    const last = (this.st.getLastSeq.get(stream) as { last_seq: number }).last_seq;
    const cursor = existing ? existing.cursor : cfg.deliverPolicy === "new" ? last : 0;
    this.st.putConsumer.run(stream, cfg.durable, JSON.stringify(cfg), cursor);
  }

  /**
   * Takes the next deliverable message for a durable: due redeliveries first (as JetStream does), then new
   * messages past the cursor. Deliveries past maxDeliver are moved to the dead-letter stream on the way.
   */
  claim(stream: string, cfg: ConsumerConfig, now: number): { msg?: Claimed; dead: StoredMsg[] } {
    return this.db.transaction(() => {
      const dead: StoredMsg[] = [];
      const durable = cfg.durable;
      const maxDeliver = cfg.maxDeliver ?? -1;
      for (;;) {
        const due = this.st.dueRedelivery.get(stream, durable, now) as { seq: number; deliveries: number } | undefined;
        if (!due) break;
        const m = this.load(stream, due.seq);
        if (!m) {
          this.st.delPending.run(stream, durable, due.seq);
          continue;
        }
        if (maxDeliver > 0 && due.deliveries >= maxDeliver) {
          dead.push(this.deadLetter(m, durable, due.deliveries, "max_deliver", now));
          continue;
        }
        const deliveries = due.deliveries + 1;
        this.st.putPending.run(stream, durable, due.seq, deliveries, now + redeliveryDelayMs(cfg, deliveries));
        return { msg: { ...m, deliveries }, dead };
      }
      const c = this.st.getConsumer.get(stream, durable) as { cursor: number } | undefined;
      if (!c) throw new BurrowError(Code.NotFound, `consumer "${durable}" on "${stream}" not found`);
      const filter = cfg.filterSubject?.split(".");
      let cursor = c.cursor;
      for (;;) {
        // Unfiltered consumers take the very next row; filtered ones scan ahead in small pages.
        const rows = this.st.scanMsgs.all(stream, cursor, filter ? 64 : 1) as { seq: number; subject: string }[];
        if (rows.length === 0) break;
        for (const r of rows) {
          cursor = r.seq;
          if (filter && !matchTokens(filter, r.subject.split("."))) continue;
          this.st.setCursor.run(cursor, stream, durable);
          this.st.putPending.run(stream, durable, r.seq, 1, now + redeliveryDelayMs(cfg, 1));
          return { msg: { ...this.load(stream, r.seq)!, deliveries: 1 }, dead };
        }
      }
      if (cursor !== c.cursor) this.st.setCursor.run(cursor, stream, durable);
      return { dead };
    })();
  }

  /** Earliest time a pending delivery of this durable becomes due again, if any. */
  nextDue(stream: string, durable: string): number | undefined {
    const r = this.st.nextVisible.get(stream, durable) as { t: number | null };
    return r.t ?? undefined;
  }

  ack(stream: string, durable: string, seq: number): void {
    this.db.transaction(() => {
      this.st.delPending.run(stream, durable, seq);
      if (this.streams.get(stream)?.cfg.retention === "workqueue") this.st.delMsg.run(stream, seq);
    })();
  }

  /** Moves a pending delivery's due time; false when it is no longer pending (already acked or dead). */
  reschedule(stream: string, durable: string, seq: number, visibleAt: number): boolean {
    return this.st.setVisible.run(visibleAt, stream, durable, seq).changes > 0;
  }

  pendingDeliveries(stream: string, durable: string, seq: number): number | undefined {
    const r = this.st.getPending.get(stream, durable, seq) as { deliveries: number } | undefined;
    return r?.deliveries;
  }

  term(stream: string, durable: string, seq: number, now: number, reason: DeadLetterReason, error?: string): StoredMsg | undefined {
    return this.db.transaction(() => {
      const deliveries = this.pendingDeliveries(stream, durable, seq);
      if (deliveries === undefined) return undefined;
      const m = this.load(stream, seq);
      if (!m) {
        this.st.delPending.run(stream, durable, seq);
        return undefined;
      }
      return this.deadLetter(m, durable, deliveries, reason, now, error);
    })();
  }

  private deadLetter(m: StoredMsg, durable: string, deliveries: number, reason: DeadLetterReason, now: number, error?: string): StoredMsg {
    this.st.delPending.run(m.stream, durable, m.seq);
    if (this.streams.get(m.stream)?.cfg.retention === "workqueue") this.st.delMsg.run(m.stream, m.seq);
    const subject = deadLetterSubject(m.stream, durable);
    const headers = deadLetterHeaders(m.headers, { reason, stream: m.stream, durable, subject: m.subject, seq: m.seq, deliveries, error });
    const { seq } = this.appendTx(DLQ_STREAM, subject, headers, m.data, `dlq:${m.stream}:${m.seq}`, now);
    return { stream: DLQ_STREAM, seq, subject, headers, data: m.data, msgId: undefined, ts: now };
  }

  consumerInfo(stream: string, cfg: ConsumerConfig): { numPending: number; numAckPending: number } {
    const c = this.st.getConsumer.get(stream, cfg.durable) as { cursor: number } | undefined;
    if (!c) throw new BurrowError(Code.NotFound, `consumer "${cfg.durable}" on "${stream}" not found`);
    const filter = cfg.filterSubject?.split(".");
    let numPending = 0;
    for (const r of this.db.prepare("SELECT subject FROM messages WHERE stream = ? AND seq > ?").iterate(stream, c.cursor) as Iterable<{ subject: string }>) {
      if (!filter || matchTokens(filter, r.subject.split("."))) numPending++;
    }
    const numAckPending = (this.st.countPending.get(stream, cfg.durable) as { n: number }).n;
    return { numPending, numAckPending };
  }
}

/** Whether some subject could match both patterns (used to refuse overlapping streams, as NATS does). */
function overlaps(a: readonly string[], b: readonly string[]): boolean {
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a[i];
    const y = b[i];
    if (x === ">" || y === ">") return x !== undefined && y !== undefined;
    if (x === undefined || y === undefined) return false;
    if (x !== "*" && y !== "*" && x !== y) return false;
  }
  return true;
}
