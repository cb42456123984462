// What a node publishes for each of its filesystem-paused sandboxes so that another node can take it over
// (sandbox-moves.ts): everything its SQLite row and its orchestrator record hold that a resume needs, in the
// burrow_sandbox_moves bucket by sandbox id. Versioned: readers keep fields they do not know and refuse a version
// they cannot honour. It holds the sandbox's envd access token and env vars, as its owner's state directory does:
// the NATS cluster is as trusted as the nodes' disks (its operators only).
import type { MovableSandbox, SandboxLimits } from "@burrow/orchestrator";
import { BurrowError, Code } from "@burrow/protocol";
import type { SandboxLifecycle } from "../lifecycle/sandbox-lifecycle.js";
import type { SandboxNetworkConfig } from "../network/network-config.js";
import type { PackedLayer } from "./layer-archive.js";
import type { LayerSource } from "./template-records.js";

/** 1: the first. */
export const MOVE_RECORD_VERSION = 1;

export interface MoveRecord {
  v: number;
  sandboxId: string;
  /** The node that published it (the owner when it paused). */
  node: string;
  publishedAt: string;
  /** The boot id of the halted sandbox it was read from (a resume there makes it stale). */
  bootId?: string | undefined;
  /** Its row, as the owner's SQLite keeps it. */
  row: {
    templateId: string;
    alias: string | null;
    metadata: Record<string, string>;
    cpuCount: number;
    memoryMB: number;
    diskSizeMB: number;
    startedAt: string;
    envdVersion: string;
    envdAccessToken: string;
    allowInternetAccess: boolean;
    /** The shared team id; null: the owner's default team (each node's own, team-sync.ts). */
    teamId: string | null;
    /** The public id of the key that made it (keys travel by public id); null when none or unknown. */
    apiKeyPublicId: string | null;
    mcpServers: string[] | null;
    lifecycle: SandboxLifecycle;
    timeoutSec: number | null;
    /** E2B's network config of the sandbox, when it has one. */
    network?: SandboxNetworkConfig | undefined;
  };
  /** Its orchestrator record's boot spec, each layer with where another node gets it. */
  boot: {
    layers: Array<{ layerId: string; source: LayerSource }>;
    runtime?: MovableSandbox["boot"]["runtime"];
    envVars: Record<string, string>;
    accessToken: string;
  };
  limits: SandboxLimits;
  allowInternetAccess: boolean;
  egress?: MovableSandbox["egress"];
  /** Its writable layer: an object of the sandbox layers store, named by the archive's sha256. */
  writable: PackedLayer;
}

export function encodeMoveRecord(record: MoveRecord): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(record));
}

export function decodeMoveRecord(bytes: Uint8Array): MoveRecord {
  const value = JSON.parse(new TextDecoder().decode(bytes)) as Partial<MoveRecord> | null;
  if (!value || typeof value.sandboxId !== "string" || typeof value.v !== "number" || !value.row || !value.boot || !value.writable) {
    throw new BurrowError(Code.DataLoss, "a sandbox move record lacks its sandbox, row, boot spec or writable layer", { reason: "bad_move_record" });
  }
  if (value.v > MOVE_RECORD_VERSION) {
    // A newer node's record may need what this node does not know how to restore: it is not taken over here.
    throw new BurrowError(Code.FailedPrecondition, `sandbox ${value.sandboxId} was published by a newer node (move record v${value.v})`, { reason: "move_record_too_new" });
  }
  return value as MoveRecord;
}
