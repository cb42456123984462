// Burrow's checkpoint endpoints (/burrow/v1) over HTTP, as the SDK's Sandbox and Checkpoint call them. Answers in
// the server's wire names (checkpointID, parentID…) become camelCase objects with Dates.
import type { CheckpointTreeWire, CheckpointWire } from "@burrow/protocol";
import { Http, type CallOptions } from "../bus/http.js";

/**
 * A checkpoint of a sandbox's files. Files only: running processes and memory are not kept (they restart on
 * rollback and in branches).
 */
export interface CheckpointInfo {
  checkpointId: string;
  /** The sandbox it was taken from (it may have ended: checkpoints stay until deleted). */
  sandboxId: string;
  /** The checkpoint it descends from; null for a root. */
  parentId: string | null;
  label?: string;
  createdAt: Date;
  /** Disk bytes only this checkpoint holds (what deleting it frees now). */
  sizeBytes: number;
  contents: "files";
  /** In a tree: whether the sandbox's current files descend from this checkpoint. */
  current?: boolean;
}

export interface CheckpointTree {
  sandboxId: string;
  /** The checkpoint the sandbox's current files descend from. */
  currentId: string | null;
  /** Parents before their children. */
  checkpoints: CheckpointInfo[];
}

/** Where the API is: the same options the e2b SDK takes. */
export interface CheckpointConnection {
  apiUrl: string;
  apiKey?: string | undefined;
  requestTimeoutMs?: number;
}

export interface WireBranchOutcome {
  sandbox?: { sandboxID: string; envdAccessToken?: string };
  error?: { code: number; message: string };
}

function fromWire(c: CheckpointWire): CheckpointInfo {
  return {
    checkpointId: c.checkpointID,
    sandboxId: c.sandboxID,
    parentId: c.parentID,
    ...(c.label !== undefined ? { label: c.label } : {}),
    createdAt: new Date(c.createdAt),
    sizeBytes: c.sizeBytes,
    contents: c.contents,
    ...(c.current !== undefined ? { current: c.current } : {}),
  };
}

const path = (...parts: string[]) => parts.map(encodeURIComponent).join("/");

export class CheckpointApi {
  private readonly http: Http;

  constructor(connection: CheckpointConnection) {
    // Branch and rollback start sandboxes: give them as long as a create.
    this.http = new Http({
      baseUrl: connection.apiUrl,
      ...(connection.apiKey !== undefined ? { apiKey: connection.apiKey } : {}),
      requestTimeoutMs: Math.max(connection.requestTimeoutMs ?? 0, 120_000),
    });
  }

  async create(sandboxId: string, label?: string, opts: CallOptions = {}): Promise<CheckpointInfo> {
    const r = await this.http.json<CheckpointWire>(`/sandboxes/${path(sandboxId)}/checkpoints`, "POST", label === undefined ? {} : { label }, opts);
    return fromWire(r.body!);
  }

  async tree(sandboxId: string, opts: CallOptions = {}): Promise<CheckpointTree> {
    const r = await this.http.json<CheckpointTreeWire>(
      `/sandboxes/${path(sandboxId)}/checkpoints`,
      "GET",
      undefined,
      opts,
    );
    const body = r.body!;
    return { sandboxId: body.sandboxID, currentId: body.currentID, checkpoints: body.checkpoints.map(fromWire) };
  }

  async rollback(sandboxId: string, checkpointId: string, opts: CallOptions = {}): Promise<void> {
    await this.http.json(`/sandboxes/${path(sandboxId)}/rollback`, "POST", { checkpointID: checkpointId }, opts);
  }

  async get(checkpointId: string, opts: CallOptions = {}): Promise<CheckpointInfo> {
    const r = await this.http.json<CheckpointWire>(`/checkpoints/${path(checkpointId)}`, "GET", undefined, opts);
    return fromWire(r.body!);
  }

  async branch(checkpointId: string, count: number, opts: CallOptions & { timeoutSec?: number } = {}): Promise<WireBranchOutcome[]> {
    const body = { count, ...(opts.timeoutSec !== undefined ? { timeout: opts.timeoutSec } : {}) };
    const r = await this.http.json<WireBranchOutcome[]>(`/checkpoints/${path(checkpointId)}/branch`, "POST", body, opts);
    return r.body!;
  }

  /** Resolves the ids deleted (the checkpoint, and with `cascade` its descendants). */
  async delete(checkpointId: string, opts: CallOptions & { cascade?: boolean } = {}): Promise<string[]> {
    const query = opts.cascade ? "?cascade=true" : "";
    const r = await this.http.json<{ deleted: string[] }>(`/checkpoints/${path(checkpointId)}${query}`, "DELETE", undefined, opts);
    return r.body!.deleted;
  }
}
