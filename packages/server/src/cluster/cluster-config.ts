// The cluster settings of a node: where the NATS JetStream servers are and what this node is called there. A server
// without servers configured is a single machine (no NATS, nothing of the cluster runs).
import { hostname } from "node:os";
import { BurrowError, Code } from "@burrow/protocol";

/** How often a node rewrites its record (load, liveness). */
export const DEFAULT_HEARTBEAT_MS = 3_000;
/** A node whose record is older than this is reported down: a few missed heartbeats, not one slow write. */
export const DEFAULT_DOWN_AFTER_MS = 15_000;
/** Writable layers up to 10 GiB are published for moves. */
export const DEFAULT_MOVE_MAX_MB = 10_240;

export interface ClusterConfig {
  /** NATS servers (nats:// or tls:// URLs); every node of a cluster names the same cluster. (env BURROW_CLUSTER, comma-separated) */
  readonly servers: readonly string[];
  /** This node's name, unique in the cluster: letters, digits, '-' and '_'. @default the host name (env BURROW_NODE_NAME) */
  readonly nodeName: string;
  /**
   * The http:// URL other nodes reach this node's API and gateway at. null: the URL the server listens on, which is
   * only right when the nodes share a network where that address means this node (loopback only on one machine).
   * @default null (env BURROW_NODE_URL)
   */
  readonly advertiseUrl: string | null;
  /** @default 3000 (env BURROW_CLUSTER_HEARTBEAT_MS) */
  readonly heartbeatMs: number;
  /** @default 15000 (env BURROW_CLUSTER_DOWN_AFTER_MS) */
  readonly downAfterMs: number;
  /**
   * Copies the NATS cluster keeps of each bucket the node creates (JetStream allows 1-5; 3 survives the loss of one
   * server). The first node to create a bucket decides; later nodes use it as it is.
   * @default the number of servers listed, at most 3 (env BURROW_CLUSTER_REPLICAS)
   */
  readonly replicas: number;
  /**
   * A filesystem pause whose writable layer is larger than this many MiB is not published for moves (it stays on its
   * node; the owner record says why): every published pause uploads its whole writable layer to the NATS cluster.
   * @default 10240 (env BURROW_CLUSTER_MOVE_MAX_MB)
   */
  readonly moveMaxMB: number;
}

export type ClusterConfigInput = Partial<ClusterConfig>;

const NODE_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;

function clusterError(message: string): BurrowError {
  return new BurrowError(Code.InvalidArgument, message, { reason: "invalid_config" });
}

function intSetting(field: string, input: number | undefined, env: NodeJS.ProcessEnv, variable: string, fallback: number): number {
  const raw = env[variable];
  const fromEnv = input === undefined && raw !== undefined && raw !== "";
  const value = input ?? (fromEnv ? Number(raw) : fallback);
  if (!Number.isInteger(value) || value < 1) throw clusterError(`${fromEnv ? variable : field} must be a positive integer, got ${fromEnv ? `'${raw}'` : value}`);
  return value;
}

/**
 * Input over environment over defaults, as the server's other settings. null (explicitly, or no servers anywhere):
 * no cluster. Resolving a resolved config returns an equal one.
 */
export function resolveClusterConfig(input: ClusterConfigInput | null | undefined, env: NodeJS.ProcessEnv): ClusterConfig | null {
  if (input === null) return null;
  const servers = input?.servers ?? splitServers(env["BURROW_CLUSTER"]);
  if (servers.length === 0) return null;
  for (const url of servers) {
    if (!/^(nats|tls):\/\/[^/\s]+$/.test(url)) throw clusterError(`cluster servers must be nats:// or tls:// URLs, got '${url}'`);
  }
  const nodeName = input?.nodeName ?? (env["BURROW_NODE_NAME"] || hostname().split(".")[0]!);
  if (!NODE_NAME.test(nodeName)) throw clusterError(`node name must be 1-63 letters, digits, '-' or '_' (starting with a letter or digit), got '${nodeName}'`);
  const advertiseUrl = input?.advertiseUrl !== undefined ? input.advertiseUrl : env["BURROW_NODE_URL"] || null;
  if (advertiseUrl !== null && !/^http:\/\/[^/\s]+\/?$/.test(advertiseUrl)) {
    throw clusterError(`node URL must be http://HOST:PORT (nodes talk plain HTTP to each other), got '${advertiseUrl}'`);
  }
  const heartbeatMs = intSetting("cluster.heartbeatMs", input?.heartbeatMs, env, "BURROW_CLUSTER_HEARTBEAT_MS", DEFAULT_HEARTBEAT_MS);
  const downAfterMs = intSetting("cluster.downAfterMs", input?.downAfterMs, env, "BURROW_CLUSTER_DOWN_AFTER_MS", DEFAULT_DOWN_AFTER_MS);
  const replicas = intSetting("cluster.replicas", input?.replicas, env, "BURROW_CLUSTER_REPLICAS", Math.min(servers.length, 3));
  const moveMaxMB = intSetting("cluster.moveMaxMB", input?.moveMaxMB, env, "BURROW_CLUSTER_MOVE_MAX_MB", DEFAULT_MOVE_MAX_MB);
  if (replicas > 5) throw clusterError(`cluster.replicas must be at most 5 (JetStream's limit), got ${replicas}`);
  if (downAfterMs <= heartbeatMs) throw clusterError(`cluster.downAfterMs (${downAfterMs}) must exceed cluster.heartbeatMs (${heartbeatMs})`);
  return Object.freeze({
    servers: Object.freeze([...servers]),
    nodeName,
    advertiseUrl: advertiseUrl?.replace(/\/$/, "") ?? null,
    heartbeatMs,
    downAfterMs,
    replicas,
    moveMaxMB,
  });
}

function splitServers(raw: string | undefined): string[] {
  return (raw ?? "").split(",").map((s) => s.trim()).filter(Boolean);
}
