// The node's connection to the cluster's NATS servers and the buckets the cluster keeps there. A connection of its
// own, not the agent bus's: the bus may be embedded while the node is clustered, and cluster state must not wait
// behind a flood of bus traffic.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Kvm, type KV } from "@nats-io/kv";
import { clusterError } from "./cluster-errors.js";

/** Node records, by node name. */
export const NODES_BUCKET = "burrow_nodes";
/** Which node owns each sandbox, by sandbox id. */
export const OWNERS_BUCKET = "burrow_sandbox_owners";

export interface ClusterKv {
  readonly nc: NatsConnection;
  readonly nodes: KV;
  readonly owners: KV;
  close(): Promise<void>;
}

export async function openClusterKv(servers: readonly string[], nodeName: string): Promise<ClusterKv> {
  let nc: NatsConnection;
  try {
    nc = await connect({ servers: [...servers], name: `burrow-node-${nodeName}`, reconnect: true, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  } catch (err) {
    throw clusterError(err, `connect to ${servers.join(",")}`);
  }
  try {
    const kvm = new Kvm(nc);
    // History 1: only the current record matters; revisions still increase, which is what the checks compare.
    const nodes = await kvm.create(NODES_BUCKET, { history: 1 });
    const owners = await kvm.create(OWNERS_BUCKET, { history: 1 });
    return { nc, nodes, owners, close: () => nc.close() };
  } catch (err) {
    await nc.close().catch(() => undefined);
    throw clusterError(err, "open the cluster's buckets");
  }
}
