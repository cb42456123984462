// The keys of a NATS KV bucket from its stream's per-subject counts: one request (paged by the client for very large
// buckets). @nats-io/kv's own listing goes through a push consumer that, on a loaded host, can miss the messages it
// was sent and then ends at its 5 s idle heartbeat — late, and without the keys it missed. Keys whose last entry is a
// delete or purge marker are listed too: a reader gets each key and skips those.
import type { JetStreamManager } from "@nats-io/jetstream";

export async function kvStoredKeys(jsm: JetStreamManager, bucket: string): Promise<string[]> {
  const prefix = `$KV.${bucket}.`;
  const info = await jsm.streams.info(`KV_${bucket}`, { subjects_filter: `${prefix}>` });
  return Object.keys(info.state.subjects ?? {}).map((subject) => subject.slice(prefix.length));
}
