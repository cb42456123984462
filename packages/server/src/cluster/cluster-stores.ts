// Opening a cluster bucket or object store: the first node to make it decides its settings (replicas); every later
// node opens it as it is, whatever count it was configured with.
import { JetStreamApiError } from "@nats-io/jetstream";
import type { Kvm, KV } from "@nats-io/kv";
import type { ObjectStore, Objm } from "@nats-io/obj";

/** JetStream's "stream name already in use with a different configuration". */
const STREAM_NAME_IN_USE = 10058;

async function createOrOpen<T>(create: () => Promise<T>, open: () => Promise<T>): Promise<T> {
  try {
    return await create();
  } catch (err) {
    if (err instanceof JetStreamApiError && err.code === STREAM_NAME_IN_USE) return open();
    throw err;
  }
}

/**
 * A KV bucket as every cluster bucket is: history 1 (only the current record matters; revisions still increase, which
 * is what checked writes compare) and no direct gets (with replicas a follower still behind a write could answer, and
 * a node that reads "no record" for a sandbox just created, or keeps one it just failed to see, routes and releases
 * wrongly).
 */
export function openClusterBucket(kvm: Kvm, name: string, replicas: number): Promise<KV> {
  return createOrOpen(
    () => kvm.create(name, { history: 1, replicas, allow_direct: false }),
    () => kvm.open(name),
  );
}

export function openClusterObjectStore(objm: Objm, name: string, replicas: number): Promise<ObjectStore> {
  return createOrOpen(
    () => objm.create(name, { replicas }),
    () => objm.open(name),
  );
}
