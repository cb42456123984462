// A template built on one node is started on another: two Burrow nodes (the real CLI, each with its own state
// directory, subnet and base template) on a 3-server NATS JetStream cluster on the loopback. The official e2b SDK
// builds two small templates on node A (a file written by a RUN step); with A cordoned, a create through node B can
// only go to B, which fetches the template's layers from the object store and starts it: the file is there. A second
// create on B fetches nothing (its layer directories are the same ones). Another team's key cannot make B fetch the
// template (404). The second template's own layer objects, overwritten in the store with other bytes through the
// NATS API, make B's create fail naming the corrupt object, with no layer, manifest or transfer left on B. Deleting
// the first template on A deletes its record and B's copy.
import { randomBytes } from "node:crypto";
import { readdirSync, realpathSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Sandbox, Template } from "e2b";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { Objm } from "@nats-io/obj";
import { NatsCluster } from "./nats-cluster.js";
import { tearDownServers } from "../helpers/tear-down.js";
import { keyedApi } from "../helpers/keyed-api.js";
import { until } from "./lifecycle-events.js";
import { cliNodes, cordonNode, createTeam, nodesSeenBy, nodeUrl as url, readOwnerRecord, sdkOptions, startCliNodes, waitForNodesUp, type CliNode as Node } from "./cli-nodes.js";

const API_KEY = `e2b_${randomBytes(20).toString("hex")}`;
const suffix = randomBytes(3).toString("hex");

interface TemplateRecord {
  templateId: string;
  layers: Record<string, { digest?: string; shipped?: string }>;
}

describe("templates built on one node, started on another", () => {
  let nats: NatsCluster | undefined;
  let nc: NatsConnection | undefined;
  const nodes = cliNodes("te", ["node-a", "node-b"]);
  const [a, b] = nodes as [Node, Node];
  const conn = (node: Node, apiKey = API_KEY) => sdkOptions(node, apiKey);
  const made: string[] = [];
  const names = { one: `everywhere-${suffix}`, two: `corrupt-${suffix}` };
  const ids: Record<string, string> = {};

  /** Each layer directory of B with its inode: a fetched layer is a new directory. */
  const layersOf = (node: Node) =>
    Object.fromEntries(readdirSync(join(node.instance.stateDir, "layers")).map((name) => [name, statSync(join(node.instance.stateDir, "layers", name)).ino]));

  async function record(templateId: string): Promise<TemplateRecord | undefined> {
    const entry = await (await new Kvm(nc!).open("burrow_templates")).get(templateId);
    return entry?.operation === "PUT" ? entry.json<TemplateRecord>() : undefined;
  }

  async function build(name: string, line: string): Promise<string> {
    const template = Template().fromTemplate("base").runCmd(`echo '${line}' > /etc/everywhere.txt`, { user: "root" });
    const info = await Template.build(template, name, conn(a));
    return info.templateId;
  }

  beforeAll(async () => {
    nats = await NatsCluster.start(3);
    nc = await connect({ servers: nats.urls[0]! });
    await startCliNodes(nodes, nats.urls, { apiKey: API_KEY, downAfterMs: 5_000 });
    await waitForNodesUp(nodes, API_KEY);
    // Both built on A while it takes work; then A is cordoned, so that B alone can take creates.
    ids.one = await build(names.one, "written by a RUN step on node A");
    ids.two = await build(names.two, "never seen on node B");
    for (const id of [ids.one, ids.two]) await until(`template ${id} is published`, async () => (await record(id!)) !== undefined, 120_000);
    const cordon = await cordonNode(a, "node-a", "cordon", API_KEY);
    expect(cordon.status, await cordon.text()).toBe(200);
    await until("B sees A cordoned", async () => (await nodesSeenBy(b, API_KEY)).some((n) => n.name === "node-a" && n.cordoned));
  }, 900_000);

  afterAll(async () => {
    const kills = () => Promise.allSettled(made.map((id) => Sandbox.kill(id, conn(b))));
    const deletes = () => Promise.allSettled([names.one, names.two].map((n) => fetch(`${url(a)}/templates/${n}`, { method: "DELETE", headers: { "X-API-Key": API_KEY } })));
    await tearDownServers(nodes, { before: [kills, deletes], after: [() => nc?.close(), () => nats?.stop()] });
  }, 300_000);

  it("publishes the build's own layers by digest and its base by name", async () => {
    const published = await record(ids.one!);
    const sources = Object.values(published!.layers);
    expect(sources.some((s) => s.shipped === "base")).toBe(true);
    expect(sources.some((s) => /^[0-9a-f]{64}$/.test(s.digest ?? ""))).toBe(true);
  });

  it("B, which lacks the template, lists it, fetches it for a create and starts it; a second create fetches nothing", { timeout: 300_000 }, async () => {
    expect(readdirSync(join(b.instance.stateDir, "templates")).some((f) => f.startsWith(ids.one!))).toBe(false);
    await until("B lists A's templates", async () => {
      const listed = (await keyedApi(url(b), API_KEY)("GET", "/templates")).json as Array<{ templateID: string; aliases: string[] }>;
      return [ids.one, ids.two].every((id) => listed.some((t) => t.templateID === id && t.aliases.length > 0));
    });
    const first = await Sandbox.create(names.one, { ...conn(b), timeoutMs: 120_000 });
    made.push(first.sandboxId);
    expect((await first.commands.run("cat /etc/everywhere.txt")).stdout).toBe("written by a RUN step on node A\n");
    const before = layersOf(b);
    const second = await Sandbox.create(names.one, { ...conn(b), timeoutMs: 120_000 });
    made.push(second.sandboxId);
    expect((await second.commands.run("cat /etc/everywhere.txt")).stdout).toBe("written by a RUN step on node A\n");
    expect(layersOf(b)).toEqual(before);
    // Both on B: A is cordoned.
    for (const s of [first, second]) expect((await readOwnerRecord(nats!.urls, s.sandboxId))?.node).toBe("node-b");
  });

  it("another team's key does not make B fetch the template", { timeout: 120_000 }, async () => {
    const otherKey = (await createTeam(b, API_KEY, `other-${suffix}`)).adminKey.key;
    const listed = (await keyedApi(url(b), otherKey)("GET", "/templates")).json as Array<{ templateID: string }>;
    expect(listed.map((t) => t.templateID)).not.toContain(ids.two);
    const before = layersOf(b);
    await expect(Sandbox.create(names.two, { ...conn(b, otherKey), timeoutMs: 60_000 })).rejects.toThrow(/not found/i);
    expect(layersOf(b)).toEqual(before);
  });

  it("a corrupted layer object fails B's create naming it, and leaves nothing half-made", { timeout: 300_000 }, async () => {
    const mine = new Set(Object.values((await record(ids.two!))!.layers).flatMap((s) => (s.digest ? [s.digest] : [])));
    for (const s of Object.values((await record(ids.one!))!.layers)) if (s.digest) mine.delete(s.digest);
    expect(mine.size).toBeGreaterThan(0);
    const objects = await new Objm(nc!).open("burrow_layers");
    for (const digest of mine) await objects.putBlob({ name: digest }, new TextEncoder().encode(`other bytes ${digest}`.repeat(500)));
    const before = layersOf(b);
    await expect(Sandbox.create(names.two, { ...conn(b), timeoutMs: 120_000 })).rejects.toThrow(/layer object [0-9a-f]{64} is corrupt/);
    expect(layersOf(b)).toEqual(before);
    expect(readdirSync(join(b.instance.stateDir, "templates")).some((f) => f.startsWith(ids.two!))).toBe(false);
    // Beside the layers directory, which may be a link onto the data image.
    const transfers = readdirSync(join(dirname(realpathSync(join(b.instance.stateDir, "layers"))), "layer-transfers"));
    expect(transfers).toEqual([]);
  });

  it("deleting the template on A deletes its record and B's copy", { timeout: 120_000 }, async () => {
    for (const id of made.splice(0)) await Sandbox.kill(id, conn(b));
    const deleted = await fetch(`${url(a)}/templates/${names.one}`, { method: "DELETE", headers: { "X-API-Key": API_KEY } });
    expect(deleted.status).toBeLessThan(300);
    await until("the record is gone", async () => (await record(ids.one!)) === undefined);
    await until("B's copy is gone", async () => !readdirSync(join(b.instance.stateDir, "templates")).some((f) => f.startsWith(ids.one!)));
  });
});
