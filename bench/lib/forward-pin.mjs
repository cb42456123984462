// Headers that keep a request on the node it reaches (a create made there, a list of that node's own), signed as a
// node of the cluster signs what it forwards, with the secret read from the cluster's bucket.
import { connect } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { ForwardSigning } from "../../packages/server/dist/cluster/forwarded-header.js";
import { deriveForwardKey, FORWARD_SECRET_KEY } from "../../packages/server/dist/cluster/forward-secret.js";
import { SETTINGS_BUCKET } from "../../packages/server/dist/cluster/cluster-kv.js";

/** `to`: the node the request is sent to (a signature holds there, once). */
export async function pinHeaders(natsUrl, method, path, to) {
  const nc = await connect({ servers: [natsUrl] });
  try {
    const entry = await (await new Kvm(nc).open(SETTINGS_BUCKET)).get(FORWARD_SECRET_KEY);
    return new ForwardSigning(deriveForwardKey(Buffer.from(entry.value)), "bench").headers(method, path, to);
  } finally {
    await nc.close();
  }
}
