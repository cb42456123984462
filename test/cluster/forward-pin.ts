// How a test puts a request on a given node: signed as a node of the cluster would sign it (forwarded-header.ts), with
// the secret read from the cluster's bucket (a test has the NATS servers; a client of the API does not). A request so
// marked is answered by the node it reaches: a create is made there, a list is that node's own.
import { connect } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { ForwardSigning } from "../../packages/server/src/cluster/forwarded-header.js";
import { deriveForwardKey, FORWARD_SECRET_KEY } from "../../packages/server/src/cluster/forward-secret.js";
import { SETTINGS_BUCKET } from "../../packages/server/src/cluster/cluster-kv.js";

/** The cluster's signing, as node `as`; the cluster must have a node started (the first one makes the secret). Its headers
 * name the node they are sent to and hold there once (a nonce): sign each request anew. */
export async function clusterSigning(natsUrls: readonly string[], as = "test"): Promise<ForwardSigning> {
  const nc = await connect({ servers: [...natsUrls] });
  try {
    const entry = await (await new Kvm(nc).open(SETTINGS_BUCKET)).get(FORWARD_SECRET_KEY);
    if (entry?.operation !== "PUT") throw new Error("the cluster has no forwarding secret yet: start a node first");
    return new ForwardSigning(deriveForwardKey(Buffer.from(entry.value)), as);
  } finally {
    await nc.close();
  }
}
