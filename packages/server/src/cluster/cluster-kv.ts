// The node's connection to the cluster's NATS servers and the buckets the cluster keeps there. A connection of its
// own, not the agent bus's: the bus may be embedded while the node is clustered, and cluster state must not wait
// behind a flood of bus traffic.
import { connect, headers as natsHeaders, type MsgHdrs, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { Bucket, Kvm, type KV, type KvEntry } from "@nats-io/kv";
import type { Logger } from "pino";
import { BurrowError, Code } from "@burrow/protocol";
import { clusterError, isWrongLastSequence, KeyChangedError } from "./cluster-errors.js";
import { whenClusterAnswers } from "./cluster-retry.js";
import { openClusterBucket } from "./cluster-stores.js";


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
    const nodes = await whenClusterAnswers(`open bucket ${NODES_BUCKET}`, () => openClusterBucket(kvm, NODES_BUCKET, replicas), { logger });
    const owners = await whenClusterAnswers(`open bucket ${OWNERS_BUCKET}`, () => openClusterBucket(kvm, OWNERS_BUCKET, replicas), { logger });
    const losses = await whenClusterAnswers(`open bucket ${LOSSES_BUCKET}`, () => openClusterBucket(kvm, LOSSES_BUCKET, replicas), { logger });
    const teams = await whenClusterAnswers(`open bucket ${TEAMS_BUCKET}`, () => openClusterBucket(kvm, TEAMS_BUCKET, replicas), { logger });
    const keys = await whenClusterAnswers(`open bucket ${KEYS_BUCKET}`, () => openClusterBucket(kvm, KEYS_BUCKET, replicas), { logger });
    const settings = await whenClusterAnswers(`open bucket ${SETTINGS_BUCKET}`, () => openClusterBucket(kvm, SETTINGS_BUCKET, replicas), { logger });
    const teamQuotas = await whenClusterAnswers(`open bucket ${TEAM_QUOTAS_BUCKET}`, () => openClusterBucket(kvm, TEAM_QUOTAS_BUCKET, replicas), { logger });
    return { nc, jsm, nodes, owners, losses, teams, keys, settings, teamQuotas, close: () => nc.close() };
  } catch (err) {
    await nc.close().catch(() => undefined);
    throw clusterError(err, "open the cluster's buckets");
  }
}

/** Calls `listener` each time the connection is made again to a server (after one went away); ends with it. */
export function followReconnects(nc: NatsConnection, listener: (server: string) => void): void {
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type !== "reconnect") continue;
      // Once the new connection answers: JetStream requests made before that are lost with nothing said.
      await nc.flush().catch(() => undefined);
      listener(status.server);
    }
  })().catch(() => undefined);
}

// Checked writes. Every write that must not be lost to another writer (an owner claim, a take-over, a marker, a
// read-modify-write of a node, team, key or template record) goes through these, never through the KV's own
// create/update/delete with a revision. Those send `Nats-Expected-Last-Subject-Sequence`, which nats-server before
// 2.9.21 (Debian 12 ships 2.9.10) checks on a replicated stream before the Raft proposal, against what is applied:
// two writes naming one revision can both be taken (nats-io/nats-server#4320; seen on 3 servers, one double win in
// about four races). `Nats-Expected-Last-Sequence`, the stream's last sequence, is checked there counting proposals
// in flight, so these expect that instead: read the stream's last sequence, then the key (a key newer than that
// sequence was written between the two reads: read again), compare the key with what the caller expects (changed:
// KeyChangedError, which isRevisionConflict knows), and write expecting the stream still at that sequence. A write
// of any other key of the bucket in between moves the sequence and the whole read is made again; only a change of
// the key itself is a conflict (checkedUpdate, a read-modify-write, makes its value again from what it reads). The
// price: three requests instead of one, and retries that grow with the bucket's write rate (bounded:
// CHECKED_WRITE_ATTEMPTS, then an Unavailable error saying so).

/** How often a checked write reads again because writes of other keys moved the stream's sequence. */
export const CHECKED_WRITE_ATTEMPTS = 40;

/** What a checked write expects of its key: its revision, or `ABSENT` (no record, or a deleted one). */
export const ABSENT = 0;

/**
 * The only message of an empty bucket stream's seeding, a deletion of a key no one uses: JetStream takes an expected
 * last sequence of 0 as no check at all, so a checked write needs a stream with something in it. A deletion marker
 * reads as "no record" everywhere (watches, listings, gets).
 */
const SEED_KEY = "_seed";

export interface CheckedWriteOptions {
  signal?: AbortSignal | undefined;
}

/** Write `value` at `key` if the key is still at `expected` (a revision, or ABSENT). Returns the new revision. */
export async function checkedPut(kv: KV, key: string, value: Uint8Array, expected: number, options: CheckedWriteOptions = {}): Promise<number> {
  return (await checkedWrite(kv, key, (entry, bucket) => (expectedHere(bucket, key, entry, expected), value), undefined, options))!;
}

/** Write `value` at `key` if the key has no record (none, or a deleted one). Returns the new revision. */
export function checkedCreate(kv: KV, key: string, value: Uint8Array, options: CheckedWriteOptions = {}): Promise<number> {
  return checkedPut(kv, key, value, ABSENT, options);
}

/** Delete `key` (a deletion marker, as the KV's delete) if it is still at revision `expected`. */
export async function checkedDelete(kv: KV, key: string, expected: number, options: CheckedWriteOptions = {}): Promise<void> {
  const h = natsHeaders();
  h.set("KV-Operation", "DEL");
  await checkedWrite(kv, key, (entry, bucket) => (expectedHere(bucket, key, entry, expected), new Uint8Array(0)), h, options);
}

/**
 * Read `key` and write what `change` makes of its entry (null: none), with nothing written to the key meanwhile: a
 * read-modify-write in one read. `change` runs again after each read (it must not keep state between runs) and
 * returns undefined to write nothing. Returns the new revision, or undefined when nothing was written.
 */
export function checkedUpdate(kv: KV, key: string, change: (entry: KvEntry | null) => Uint8Array | undefined, options: CheckedWriteOptions = {}): Promise<number | undefined> {
  return checkedWrite(kv, key, change, undefined, options);
}

function expectedHere(bucket: string, key: string, entry: KvEntry | null, expected: number): void {
  const live = entry !== null && entry.operation === "PUT";
  if (expected === ABSENT ? live : entry?.revision !== expected) throw new KeyChangedError(bucket, key, entry?.revision ?? 0);
}

async function checkedWrite(
  kv: KV,
  key: string,
  make: (entry: KvEntry | null, bucket: string) => Uint8Array | undefined,
  hdrs: MsgHdrs | undefined,
  options: CheckedWriteOptions,
): Promise<number | undefined> {
  // The KV interface has no way to send another expectation; its implementation class exposes what it sends with.
  if (!(kv instanceof Bucket)) throw new BurrowError(Code.Internal, `checked write of ${key}: not a JetStream KV bucket`);
  const subject = kv.subjectForKey(kv.encodeKey(key), true);
  for (let attempt = 0; attempt < CHECKED_WRITE_ATTEMPTS; attempt++) {
    options.signal?.throwIfAborted();
    // The stream's last sequence first (the leader's, as applied), then the key: both read from the stream's leader.
    const last = (await kv.jsm.streams.info(kv.stream)).state.last_seq;
    if (last === 0) {
      await kv.delete(SEED_KEY);
      continue;
    }
    const entry = await kv.get(key);
    if (!entry || entry.revision <= last) {
      const payload = make(entry, kv.bucket);
      if (payload === undefined) return undefined;
      try {
        const ack = await kv.js.publish(subject, payload, { ...(hdrs ? { headers: hdrs } : {}), expect: { lastSequence: last } });
        return ack.seq;
      } catch (err) {
        if (!isWrongLastSequence(err)) throw err;
      }
      // Another write came first. A short random wait, longer as attempts go, so that writers spread out.
      await new Promise((r) => setTimeout(r, Math.random() * Math.min(50, 1 + attempt * 3)));
    }
  }
  throw new BurrowError(Code.Unavailable, `key ${key} of bucket ${kv.bucket} was not written: other writes kept moving the bucket's sequence (${CHECKED_WRITE_ATTEMPTS} attempts); retry`, {
    reason: "cluster_contended",
  });
}
