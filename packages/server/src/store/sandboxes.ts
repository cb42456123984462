// The control plane's record of every sandbox it handed out. The store is the truth across restarts; the
// orchestrator's live view is reconciled against it at start (lifecycle/reconcile.ts).
import type { Db } from "./database.js";

export type SandboxRowState = "running" | "paused";

export interface SandboxRow {
  sandboxId: string;
  templateId: string;
  /** Template alias the sandbox was created from, when the template has one. */
  alias: string | null;
  clientId: string;
  metadata: Record<string, string>;
  cpuCount: number;
  memoryMB: number;
  diskSizeMB: number;
  startedAt: Date;
  endAt: Date;
  state: SandboxRowState;
  envdVersion: string;
  envdAccessToken: string;
  allowInternetAccess: boolean;
  /** Key that created the sandbox (null when created before keys were tracked or the key was removed). */
  apiKeyId: number | null;
}

interface RawRow {
  sandbox_id: string;
  template_id: string;
  alias: string | null;
  client_id: string;
  metadata: string;
  cpu_count: number;
  memory_mb: number;
  disk_mb: number;
  started_at: number;
  end_at: number;
  state: string;
  envd_version: string;
  envd_access_token: string;
  allow_internet_access: number;
  api_key_id: number | null;
}

function fromRaw(r: RawRow): SandboxRow {
  return {
    sandboxId: r.sandbox_id,
    templateId: r.template_id,
    alias: r.alias,
    clientId: r.client_id,
    metadata: JSON.parse(r.metadata) as Record<string, string>,
    cpuCount: r.cpu_count,
    memoryMB: r.memory_mb,
    diskSizeMB: r.disk_mb,
    startedAt: new Date(r.started_at),
    endAt: new Date(r.end_at),
    state: r.state === "paused" ? "paused" : "running",
    envdVersion: r.envd_version,
    envdAccessToken: r.envd_access_token,
    allowInternetAccess: r.allow_internet_access !== 0,
    apiKeyId: r.api_key_id,
  };
}

export class SandboxStore {
  readonly #insert;
  readonly #get;
  readonly #all;
  readonly #delete;
  readonly #setEndAt;
  readonly #setState;
  readonly #countRunning;

  constructor(db: Db) {
    this.#insert = db.prepare<[RawRow]>(
      `INSERT INTO sandboxes (sandbox_id, template_id, alias, client_id, metadata, cpu_count, memory_mb, disk_mb,
         started_at, end_at, state, envd_version, envd_access_token, allow_internet_access, api_key_id)
       VALUES (@sandbox_id, @template_id, @alias, @client_id, @metadata, @cpu_count, @memory_mb, @disk_mb,
         @started_at, @end_at, @state, @envd_version, @envd_access_token, @allow_internet_access, @api_key_id)`,
    );
    this.#get = db.prepare<[string], RawRow>("SELECT * FROM sandboxes WHERE sandbox_id = ?");
    this.#all = db.prepare<[], RawRow>("SELECT * FROM sandboxes ORDER BY started_at DESC, sandbox_id DESC");
    this.#delete = db.prepare<[string]>("DELETE FROM sandboxes WHERE sandbox_id = ?");
    this.#setEndAt = db.prepare<[number, string]>("UPDATE sandboxes SET end_at = ? WHERE sandbox_id = ?");
    this.#setState = db.prepare<[string, string]>("UPDATE sandboxes SET state = ? WHERE sandbox_id = ?");
    this.#countRunning = db.prepare<[], { n: number }>("SELECT count(*) AS n FROM sandboxes WHERE state = 'running'");
  }

  insert(row: SandboxRow): void {
    this.#insert.run({
      sandbox_id: row.sandboxId,
      template_id: row.templateId,
      alias: row.alias,
      client_id: row.clientId,
      metadata: JSON.stringify(row.metadata),
      cpu_count: row.cpuCount,
      memory_mb: row.memoryMB,
      disk_mb: row.diskSizeMB,
      started_at: row.startedAt.getTime(),
      end_at: row.endAt.getTime(),
      state: row.state,
      envd_version: row.envdVersion,
      envd_access_token: row.envdAccessToken,
      allow_internet_access: row.allowInternetAccess ? 1 : 0,
      api_key_id: row.apiKeyId,
    });
  }

  get(sandboxId: string): SandboxRow | undefined {
    const raw = this.#get.get(sandboxId);
    return raw && fromRaw(raw);
  }

  /** Every sandbox, newest first. The control plane holds hundreds, not millions: filters run in memory. */
  list(): SandboxRow[] {
    return this.#all.all().map(fromRaw);
  }

  /** Remove a sandbox; false when it was not there (another path already removed it). */
  delete(sandboxId: string): boolean {
    return this.#delete.run(sandboxId).changes > 0;
  }

  setEndAt(sandboxId: string, endAt: Date): boolean {
    return this.#setEndAt.run(endAt.getTime(), sandboxId).changes > 0;
  }

  setState(sandboxId: string, state: SandboxRowState): boolean {
    return this.#setState.run(state, sandboxId).changes > 0;
  }

  countRunning(): number {
    return this.#countRunning.get()!.n;
  }
}
