// A team's limits at the same instant on two Burrow nodes (the real CLI, own state directories and subnets) on a
// 3-server NATS JetStream cluster on the loopback: creates of one team sent to both nodes at once, some made where they
// arrive (signed as a node would sign them), some placed, never pass a limit of N together, round after round
// (cluster/team-ledger.ts); the create rate and the disk limit refuse the same through either node; and a forwarded
// mark's signature holds once, on the node it names: the same headers again, or sent to another node, are a client's.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { NatsCluster } from "./nats-cluster.js";
import { until } from "./lifecycle-events.js";
import { clusterSigning } from "./forward-pin.js";
import type { ForwardSigning } from "../../packages/server/src/cluster/forwarded-header.js";
import { tearDownServers } from "../helpers/tear-down.js";
import { keyedApi } from "../helpers/keyed-api.js";
import { cliNodes, createTeam, nodeUrl as url, readOwnerRecord, startCliNodes, waitForNodesUp, type CliNode as Node } from "./cli-nodes.js";

const API_KEY = `e2b_${randomBytes(20).toString("hex")}`;

describe("a team's limits at the same instant on two nodes, and forward signatures that hold once", () => {
  let nats: NatsCluster;
  let signing: ForwardSigning;
  const nodes = cliNodes("tl", ["node-a", "node-b"]);
  const [a, b] = nodes as [Node, Node];
  /** Sandbox id → the key that made it, for the kill at the end. */
  const made = new Map<string, string>();

  /** A create through `node`; `pinned`: made there (signed for that node, once), else placed by it. */
  const create = async (node: Node, key: string, pinned: boolean) => {
    const headers: Record<string, string> = { "X-API-Key": key, "content-type": "application/json", ...(pinned ? signing.headers("POST", "/sandboxes", node.name) : {}) };
    const res = await fetch(`${url(node)}/sandboxes`, { method: "POST", headers, body: JSON.stringify({ templateID: "base", timeout: 300 }) });
    const json = (await res.json()) as { sandboxID?: string; code?: number; message?: string };
    if (json.sandboxID) made.set(json.sandboxID, key);
    return { status: res.status, json };
  };
  const killAll = async (key: string) => {
    for (const [id, owner] of [...made]) {
      if (owner !== key) continue;
      const res = await fetch(`${url(a)}/sandboxes/${id}`, { method: "DELETE", headers: { "X-API-Key": key } });
      expect([204, 404]).toContain(res.status);
      made.delete(id);
    }
  };
  const ledgerOf = async () => {
    const nc = await connect({ servers: nats.urls });
    try {
      const kv = await new Kvm(nc).open("burrow_team_quotas");
      const out: string[] = [];
      for await (const key of await kv.keys()) out.push(`${key}=${new TextDecoder().decode((await kv.get(key))?.value)}`);
      return out.join(" ");
    } finally {
      await nc.close();
    }
  };
  const ownerOf = (sandboxId: string) => readOwnerRecord(nats.urls, sandboxId);
  const newTeam = async (quotas: Record<string, number>): Promise<string> => {
    const admin = keyedApi(url(a), API_KEY);
    const team = await createTeam(a, API_KEY, `limits-${randomBytes(3).toString("hex")}`);
    expect((await admin("PATCH", `/burrow/v1/teams/${team.teamID}`, { quotas })).status).toBe(200);
    const key = team.adminKey.key;
    await until("B knows the team, its key and its quotas", async () => {
      const seen = await keyedApi(url(b), key)("GET", `/burrow/v1/teams/${team.teamID}`);
      return seen.status === 200 && Object.entries(quotas).every(([name, value]) => (seen.json as { quotas: Record<string, number> }).quotas[name] === value);
    });
    return key;
  };

  beforeAll(async () => {
    nats = await NatsCluster.start(3);
    // The server's own down window: no node is lost here.
    await startCliNodes(nodes, nats.urls, { apiKey: API_KEY });
    await waitForNodesUp(nodes, API_KEY);
    signing = await clusterSigning(nats.urls);
  }, 600_000);

  afterAll(async () => {
    const kills = () => Promise.allSettled([...made].map(([id, key]) => fetch(`${url(a)}/sandboxes/${id}`, { method: "DELETE", headers: { "X-API-Key": key } })));
    await tearDownServers(nodes, { before: [kills], after: [() => nats?.stop()] });
  }, 300_000);

  it("creates of one team through both nodes at the same instant never pass its limit of N", { timeout: 600_000 }, async () => {
    for (const [round, limit] of [2, 1, 3].entries()) {
      const key = await newTeam({ maxRunningSandboxes: limit });
      // Six at once: on each node two made there and one placed (which may go to either node).
      const answers = await Promise.all([a, b].flatMap((node) => [create(node, key, true), create(node, key, true), create(node, key, false)]));
      const created = answers.filter((x) => x.status === 201);
      const refused = answers.filter((x) => x.status === 429);
      const owners = await Promise.all(created.map(async (x) => [x.json.sandboxID, await ownerOf(x.json.sandboxID!)]));
      const detail = `round ${round}, limit ${limit}: ${JSON.stringify(answers.map((x) => [x.status, x.json.message ?? x.json.sandboxID]))} owners ${JSON.stringify(owners)} ledger ${await ledgerOf()} logs ${[a, b].map((n) => n.server!.output().split("\n").filter((l) => l.includes("placed create")).join("\n")).join("\n")}`;
      expect(created.length, detail).toBeLessThanOrEqual(limit);
      expect(created.length, detail).toBeGreaterThanOrEqual(1);
      expect(created.length + refused.length, detail).toBe(answers.length);
      for (const x of refused) expect(x.json.message, detail).toMatch(/^team quota maxRunningSandboxes reached: /);
      await killAll(key);
    }
  });

  it("the create rate and the disk limit refuse the same through either node", { timeout: 300_000 }, async () => {
    const rated = await newTeam({ createsPerMinute: 2 });
    expect((await create(a, rated, true)).status).toBe(201);
    expect((await create(b, rated, true)).status).toBe(201);
    for (const node of [a, b]) {
      const third = await create(node, rated, true);
      expect(third, `through ${node.name}`).toEqual({ status: 429, json: { code: 429, message: "team quota createsPerMinute reached: your team started 2 sandboxes in the last minute and may start 2 per minute" } });
    }
    await killAll(rated);

    // A disk limit of one sandbox's disk: the one made on A fills it for B too.
    const probe = await create(a, API_KEY, true);
    expect(probe.status).toBe(201);
    const info = await fetch(`${url(a)}/sandboxes/${probe.json.sandboxID}`, { headers: { "X-API-Key": API_KEY } }).then((r) => r.json() as Promise<{ diskSizeMB: number }>);
    const disk = info.diskSizeMB;
    expect(disk).toBeGreaterThan(0);
    await killAll(API_KEY);
    const disked = await newTeam({ maxDiskMB: disk });
    expect((await create(a, disked, true)).status).toBe(201);
    for (const node of [b, a]) {
      const second = await create(node, disked, true);
      expect(second, `through ${node.name}`).toEqual({ status: 429, json: { code: 429, message: `team quota maxDiskMB reached: your team's sandboxes and volumes hold ${disk} MiB of disk of ${disk} MiB (asked for ${disk} MiB more)` } });
    }
    await killAll(disked);
  });

  it("a signed mark holds once, on the node it names: replayed, or sent to another node, it is a client's", { timeout: 300_000 }, async () => {
    const onA = await create(a, API_KEY, true);
    const onB = await create(b, API_KEY, true);
    expect([onA.status, onB.status]).toEqual([201, 201]);
    const list = async (node: Node, headers: Record<string, string>) => {
      const res = await fetch(`${url(node)}/v2/sandboxes`, { headers: { "X-API-Key": API_KEY, ...headers } });
      expect(res.status).toBe(200);
      return ((await res.json()) as Array<{ sandboxID: string }>).map((s) => s.sandboxID).sort();
    };
    const both = [onA.json.sandboxID!, onB.json.sandboxID!].sort();
    // Signed for B: B answers from its own sandboxes (a forwarded list is never fanned out again).
    const forB = signing.headers("GET", "/v2/sandboxes", b.name);
    expect(await list(b, forB)).toEqual([onB.json.sandboxID]);
    // The same headers again: a client's list, fanned out to every node.
    expect(await list(b, forB)).toEqual(both);
    // Fresh ones for B sent to A: not A's to honour.
    expect(await list(a, signing.headers("GET", "/v2/sandboxes", b.name))).toEqual(both);
    await killAll(API_KEY);
  });
});
