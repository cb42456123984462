// The control plane's record of every sandbox it handed out. The store is the truth across restarts; the
// orchestrator's live view is reconciled against it at start (lifecycle/reconcile.ts).
import type { PauseKind } from "@burrow/orchestrator";
import { DEFAULT_LIFECYCLE, type SandboxLifecycle } from "../lifecycle/sandbox-lifecycle.js";
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
  /** When it was paused (set by setState); absent or null while running. */
  pausedAt?: Date | null;
  /** Names of the MCP servers the create asked for (`mcp` in the create body); null or absent for none. */
  mcpServers?: string[] | null;
  /** What its timeout does and whether traffic resumes it, as chosen at create. @default DEFAULT_LIFECYCLE */
  lifecycle?: SandboxLifecycle;
  /** The create's timeout (seconds), which an auto-resume starts again; null for rows from before it was kept. */
  timeoutSec?: number | null;
  /** While paused: how (set by setState and setPauseKind). */
  pauseKind?: PauseKind | null;
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
  paused_at?: number | null;
  mcp_servers?: string | null;
  auto_pause?: number;
  auto_pause_memory?: number;
  auto_resume?: number;
  timeout_sec?: number | null;
  pause_kind?: string | null;
}

function pauseKindOf(r: RawRow): PauseKind | null {
  if (r.state !== "paused") return null;
  // Rows paused before the kind was kept were all frozen with their memory.
  return r.pause_kind === "filesystem" ? "filesystem" : "memory";
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
    pausedAt: r.paused_at != null ? new Date(r.paused_at) : null,
    mcpServers: r.mcp_servers != null ? (JSON.parse(r.mcp_servers) as string[]) : null,
    lifecycle: Object.freeze({
      autoPause: (r.auto_pause ?? 0) !== 0,
      autoPauseMemory: (r.auto_pause_memory ?? 1) !== 0,
      autoResume: (r.auto_resume ?? 0) !== 0,
    }),
    timeoutSec: r.timeout_sec ?? null,
    pauseKind: pauseKindOf(r),
  };
}

export class SandboxStore {
  readonly #insert;
  readonly #get;
  readonly #all;
  readonly #delete;
  readonly #setEndAt;
  readonly #setState;
  readonly #setPauseKind;
  readonly #countRunning;
  readonly #totals;

  constructor(db: Db) {
    this.#insert = db.prepare<[RawRow]>(
      `INSERT INTO sandboxes (sandbox_id, template_id, alias, client_id, metadata, cpu_count, memory_mb, disk_mb,
         started_at, end_at, state, envd_version, envd_access_token, allow_internet_access, api_key_id, mcp_servers,
         auto_pause, auto_pause_memory, auto_resume, timeout_sec)
       VALUES (@sandbox_id, @template_id, @alias, @client_id, @metadata, @cpu_count, @memory_mb, @disk_mb,
         @started_at, @end_at, @state, @envd_version, @envd_access_token, @allow_internet_access, @api_key_id,
         @mcp_servers, @auto_pause, @auto_pause_memory, @auto_resume, @timeout_sec)`,
    );
    this.#get = db.prepare<[string], RawRow>("SELECT * FROM sandboxes WHERE sandbox_id = ?");
    this.#all = db.prepare<[], RawRow>("SELECT * FROM sandboxes ORDER BY started_at DESC, sandbox_id DESC");
    this.#delete = db.prepare<[string]>("DELETE FROM sandboxes WHERE sandbox_id = ?");
    this.#setEndAt = db.prepare<[number, string]>("UPDATE sandboxes SET end_at = ? WHERE sandbox_id = ?");
    this.#setState = db.prepare<[string, number | null, string | null, string]>(
      "UPDATE sandboxes SET state = ?, paused_at = ?, pause_kind = ? WHERE sandbox_id = ?",
    );
    this.#setPauseKind = db.prepare<[string, string]>("UPDATE sandboxes SET pause_kind = ? WHERE sandbox_id = ? AND state = 'paused'");
    this.#countRunning = db.prepare<[], { n: number }>("SELECT count(*) AS n FROM sandboxes WHERE state = 'running'");
    this.#totals = db.prepare<[], { n: number; memory: number }>("SELECT count(*) AS n, coalesce(sum(memory_mb), 0) AS memory FROM sandboxes");
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
      mcp_servers: row.mcpServers?.length ? JSON.stringify(row.mcpServers) : null,
      auto_pause: (row.lifecycle ?? DEFAULT_LIFECYCLE).autoPause ? 1 : 0,
      auto_pause_memory: (row.lifecycle ?? DEFAULT_LIFECYCLE).autoPauseMemory ? 1 : 0,
      auto_resume: (row.lifecycle ?? DEFAULT_LIFECYCLE).autoResume ? 1 : 0,
      timeout_sec: row.timeoutSec ?? null,
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

  /**
   * Set the state; pausing records when (`pausedAt`, default now) and how (`kind`, default memory), running clears
   * both.
   */
  setState(sandboxId: string, state: SandboxRowState, pausedAt: Date = new Date(), kind: PauseKind = "memory"): boolean {
    const paused = state === "paused";
    return this.#setState.run(state, paused ? pausedAt.getTime() : null, paused ? kind : null, sandboxId).changes > 0;
  }

  /** Record how a paused sandbox is paused now (a conversion); false when it is not (or no longer) paused. */
  setPauseKind(sandboxId: string, kind: PauseKind): boolean {
    return this.#setPauseKind.run(kind, sandboxId).changes > 0;
  }

  countRunning(): number {
    return this.#countRunning.get()!.n;
  }

  /** Live sandboxes (running and paused) and the sum of their memory limits, for admission. */
  totals(): { sandboxes: number; memoryMB: number } {
    const { n, memory } = this.#totals.get()!;
    return { sandboxes: n, memoryMB: memory };
  }
}
