// The node's connection to the cluster's NATS servers and the buckets the cluster keeps there. A connection of its
// own, not the agent bus's: the bus may be embedded while the node is clustered, and cluster state must not wait
// behind a flood of bus traffic.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { JetStreamApiError, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { Logger } from "pino";
import { clusterError } from "./cluster-errors.js";
import { whenClusterAnswers } from "./cluster-retry.js";

/** JetStream's "stream name already in use with a different configuration". */
const STREAM_NAME_IN_USE = 10058;

/** Node records, by node name. */
export const NODES_BUCKET = "burrow_nodes";
/** Which node owns each sandbox, by sandbox id. */
export const OWNERS_BUCKET = "burrow_sandbox_owners";
/** Which node reported a down node's sandboxes lost, by the down node's name (lost-marker.ts). */
export const LOSSES_BUCKET = "burrow_node_losses";
/** Teams, by team id, and API keys (their hashes), by public id (team-sync.ts). */
export const TEAMS_BUCKET = "burrow_teams";
export const KEYS_BUCKET = "burrow_keys";
/** Cluster-wide settings made once: the forwarding secret (forward-secret.ts). */
export const SETTINGS_BUCKET = "burrow_cluster";
/** Each team's quota holds and starts on every node, by team (team-ledger.ts). */
export const TEAM_QUOTAS_BUCKET = "burrow_team_quotas";

export interface ClusterKv {
  readonly nc: NatsConnection;
  /** For what the buckets' own API does badly (listing keys: kvStoredKeys). */
  readonly jsm: JetStreamManager;
  readonly nodes: KV;
  readonly owners: KV;
  readonly losses: KV;
  readonly teams: KV;
  readonly keys: KV;
  readonly settings: KV;
  readonly teamQuotas: KV;
  close(): Promise<void>;
}

/** The bucket as configured here when it is new; as another node created it (another replica count) when not. */
async function bucket(kvm: Kvm, name: string, replicas: number): Promise<KV> {
  try {
    // History 1: only the current record matters; revisions still increase, which is what the checks compare.
    // No direct gets: with replicas they may be served by a follower still behind a write, and a node that reads
    // "no record" for a sandbox just created, or keeps a record it just failed to see, routes and releases wrongly.
    return await kvm.create(name, { history: 1, replicas, allow_direct: false });
  } catch (err) {
    if (err instanceof JetStreamApiError && err.code === STREAM_NAME_IN_USE) return kvm.open(name);
    throw err;
  }
}

export async function openClusterKv(servers: readonly string[], nodeName: string, replicas: number, logger?: Logger): Promise<ClusterKv> {
  let nc: NatsConnection;
  try {
    nc = await connect({ servers: [...servers], name: `burrow-node-${nodeName}`, reconnect: true, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  } catch (err) {
    throw clusterError(err, `connect to ${servers.join(",")}`);
  }
  try {
    const kvm = new Kvm(nc);
    const jsm = await whenClusterAnswers("reach JetStream", () => jetstreamManager(nc), { logger });
    // A replicated bucket is made by a Raft election among the servers: on a loaded machine, or while two nodes
    // start at once, that outlasts one request's timeout. Creating is idempotent, so it is simply asked again.
    const nodes = await whenClusterAnswers(`open bucket ${NODES_BUCKET}`, () => bucket(kvm, NODES_BUCKET, replicas), { logger });
    const owners = await whenClusterAnswers(`open bucket ${OWNERS_BUCKET}`, () => bucket(kvm, OWNERS_BUCKET, replicas), { logger });
    const losses = await whenClusterAnswers(`open bucket ${LOSSES_BUCKET}`, () => bucket(kvm, LOSSES_BUCKET, replicas), { logger });
    const teams = await whenClusterAnswers(`open bucket ${TEAMS_BUCKET}`, () => bucket(kvm, TEAMS_BUCKET, replicas), { logger });
    const keys = await whenClusterAnswers(`open bucket ${KEYS_BUCKET}`, () => bucket(kvm, KEYS_BUCKET, replicas), { logger });
    const settings = await whenClusterAnswers(`open bucket ${SETTINGS_BUCKET}`, () => bucket(kvm, SETTINGS_BUCKET, replicas), { logger });
    const teamQuotas = await whenClusterAnswers(`open bucket ${TEAM_QUOTAS_BUCKET}`, () => bucket(kvm, TEAM_QUOTAS_BUCKET, replicas), { logger });
    return { nc, jsm, nodes, owners, losses, teams, keys, settings, teamQuotas, close: () => nc.close() };
  } catch (err) {
    await nc.close().catch(() => undefined);
    throw clusterError(err, "open the cluster's buckets");
  }
}
