// Burrow nodes of a cluster suite, each the real CLI in a process of its own (own state directory, instance tag and
// bridge subnet) joined to a NATS cluster: how they are picked, started, reached, waited for and asked about, so that
// the suites differ only where what they test differs.
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { freePort, startServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { newTestInstance, type TestInstance } from "../helpers/test-instance.js";
import { keyedApi } from "../helpers/keyed-api.js";
import type { OwnerRecord } from "../../packages/server/src/cluster/sandbox-owners.js";
import { until } from "./lifecycle-events.js";

export interface CliNode {
  name: string;
  instance: TestInstance;
  /** 0 until the node is first started; kept across restarts, so that its URL stays the one other nodes know. */
  port: number;
  server?: ServerProcess;
}

/** How a node is started: what a suite varies (its key, a warm pool, the down window, more settings). */
export interface CliNodeSettings {
  /** The instance admin key (BURROW_API_KEY), also written to the key file that the test helpers read. */
  apiKey: string;
  /** @default 0: no warm pool, so that sandboxes come only from the test's own creates. */
  poolSize?: number;
  /** BURROW_CLUSTER_DOWN_AFTER_MS; the server's default when absent. */
  downAfterMs?: number;
  /** More arguments for `burrow up` (e.g. `--node-url`). */
  args?: string[];
  /** More environment for the server process. */
  env?: Record<string, string>;
}

/**
 * A test instance on a subnet none of `taken` has. The nodes of a suite are picked before any has made its bridge
 * (the host's routes do not show their subnets yet), so a pick can land on another's and is picked again.
 */
export function instanceBeside(label: string, taken: readonly TestInstance[]): TestInstance {
  let instance = newTestInstance(label);
  while (taken.some((other) => other.subnet === instance.subnet)) {
    rmSync(instance.stateDir, { recursive: true, force: true });
    instance = newTestInstance(label);
  }
  return instance;
}

/** One node per name, labelled `${prefix}${last letter of the name}`, each on a subnet of its own. */
export function cliNodes<N extends string>(prefix: string, names: readonly N[]): Array<CliNode & { name: N }> {
  const nodes: Array<CliNode & { name: N }> = [];
  for (const name of names) {
    nodes.push({ name, instance: instanceBeside(`${prefix}${name.slice(-1)}`, nodes.map((n) => n.instance)), port: 0 });
  }
  return nodes;
}

/** Where the node listens: the loopback, or its own address when it runs in a network namespace of its own. */
export const nodeUrl = (node: CliNode): string => `http://${node.instance.host ?? "127.0.0.1"}:${node.port}`;

/** The official SDK's options for `apiKey` on `node`, which serves the API and the sandboxes alike. */
export const sdkOptions = (node: CliNode, apiKey: string) => ({ apiKey, apiUrl: nodeUrl(node), sandboxUrl: nodeUrl(node), debug: false as const });

/** Start (or restart, on the same state directory and port) `node` joined to the cluster through `natsUrl`. */
export async function startCliNode(node: CliNode, natsUrl: string, settings: CliNodeSettings): Promise<void> {
  if (node.port === 0) node.port = await freePort();
  // The server uses BURROW_API_KEY; the test helpers (burrow CLI, tear-down) read the key file.
  writeFileSync(join(node.instance.stateDir, "api-key"), `${settings.apiKey}\n`, { mode: 0o600 });
  node.server = await startServerProcess(node.instance, node.port, ["--pool-size", String(settings.poolSize ?? 0), "--cluster", natsUrl, "--node-name", node.name, ...(settings.args ?? [])], {
    BURROW_API_KEY: settings.apiKey,
    BURROW_CLUSTER_HEARTBEAT_MS: "500",
    ...(settings.downAfterMs !== undefined ? { BURROW_CLUSTER_DOWN_AFTER_MS: String(settings.downAfterMs) } : {}),
    BURROW_CLUSTER_REPLICAS: "3",
    ...settings.env,
  });
}

/**
 * All nodes at once (their first start builds the base template; a cluster needs no start order), node i on NATS
 * server i. Settled, not all: a node failing to start must not leave the others starting unseen by the teardown.
 */
export async function startCliNodes<N extends CliNode>(nodes: readonly N[], natsUrls: readonly string[], settings: CliNodeSettings | ((node: N, i: number) => CliNodeSettings)): Promise<void> {
  const started = await Promise.allSettled(nodes.map((node, i) => startCliNode(node, natsUrls[i]!, typeof settings === "function" ? settings(node, i) : settings)));
  for (const result of started) if (result.status === "rejected") throw result.reason;
}

/** A node's record as `/burrow/v1/nodes` lists it (the fields the suites look at). */
export interface NodeView {
  name: string;
  status: string;
  cordoned: boolean;
  lastSeenAt: string;
  load: { runningSandboxes: number; templates?: string[] };
}

/** The nodes `node` knows of, asked with an instance admin key. */
export async function nodesSeenBy(node: CliNode, apiKey: string): Promise<NodeView[]> {
  const res = await fetch(`${nodeUrl(node)}/burrow/v1/nodes`, { headers: { "X-API-Key": apiKey } });
  return ((await res.json()) as { nodes?: NodeView[] }).nodes ?? [];
}

/** Until every node sees all of them up with the base template: before that, placement may not know them all. */
export async function waitForNodesUp<N extends CliNode>(nodes: readonly N[], apiKey: string | ((node: N) => string), timeoutMs = 60_000): Promise<void> {
  for (const node of nodes) {
    await until(`${node.name} sees ${nodes.length} nodes up with base`, async () => {
      const seen = await nodesSeenBy(node, typeof apiKey === "function" ? apiKey(node) : apiKey);
      return seen.length === nodes.length && seen.every((n) => n.status === "up" && n.load.templates?.includes("base"));
    }, timeoutMs);
  }
}

/** Sandboxes' owner records in the cluster's bucket, read on one connection; undefined where there is none. */
export async function readOwnerRecords(natsUrls: readonly string[], sandboxIds: Iterable<string>): Promise<Map<string, OwnerRecord | undefined>> {
  // Any server will do: a suite may have killed one of them.
  const nc = await connect({ servers: [...natsUrls] });
  try {
    const kv = await new Kvm(nc).open("burrow_sandbox_owners");
    const found = new Map<string, OwnerRecord | undefined>();
    for (const id of sandboxIds) {
      const entry = await kv.get(id);
      found.set(id, entry?.operation === "PUT" ? entry.json<OwnerRecord>() : undefined);
    }
    return found;
  } finally {
    await nc.close();
  }
}

/** A sandbox's owner record; undefined when there is none (never written, or deleted). */
export async function readOwnerRecord(natsUrls: readonly string[], sandboxId: string): Promise<OwnerRecord | undefined> {
  return (await readOwnerRecords(natsUrls, [sandboxId])).get(sandboxId);
}

/** Cordon or uncordon the node named `name`, asked through `via` (any node of the cluster). */
export function cordonNode(via: CliNode, name: string, what: "cordon" | "uncordon", apiKey: string): Promise<Response> {
  return fetch(`${nodeUrl(via)}/burrow/v1/nodes/${name}/${what}`, { method: "POST", headers: { "X-API-Key": apiKey } });
}

export interface CreatedTeam {
  teamID: string;
  name: string;
  adminKey: { id: string; key: string };
}

/** A team made on `node` by its instance admin; other nodes learn of it through the cluster's buckets, later. */
export async function createTeam(node: CliNode, adminKey: string, name: string): Promise<CreatedTeam> {
  const created = await keyedApi(nodeUrl(node), adminKey)("POST", "/burrow/v1/teams", { name });
  if (created.status !== 201) throw new Error(`team ${name} not created on ${node.name}: ${created.status} ${JSON.stringify(created.json)}`);
  return created.json as CreatedTeam;
}
