// Templates shared through a real nats-server (cluster-templates.ts, layer-archive.ts): node A's template store
// publishes a template whose layer holds what overlayfs needs (numeric owners, modes, xattrs incl. the overlay opaque
// marker, a whiteout 0/0 character device, a symlink, a hard link); nodes B, C and D, each with a template store of
// its own (real TemplateStore, its own base layer id), fetch it by digest and get the same files stacked on their own
// base. A second fetch fetches nothing, two at once fetch once, a corrupted object fails with no layer left, and a
// deletion on A removes the record, B's copy and the object.
import { execFileSync } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, symlinkSync, linkSync, writeFileSync, chownSync, chmodSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { pino } from "pino";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { Objm } from "@nats-io/obj";
import { NatsServerFixture } from "../../bus/test/helpers/nats-server.js";
import { TemplateStore } from "../../orchestrator/src/templates/template-store.js";
import { ClusterTemplates, LAYERS_STORE, TEMPLATES_BUCKET, type TemplateTeams } from "../src/cluster/cluster-templates.js";
import { packLayer } from "../src/cluster/layer-archive.js";
import { decodeTemplateRecord } from "../src/cluster/template-records.js";

const logger = pino({ level: "silent" });
let nats: NatsServerFixture;
let nc: NatsConnection;
const dirs: string[] = [];
const nodes: ClusterTemplates[] = [];

interface TestNode {
  store: TemplateStore;
  root: string;
  templates: ClusterTemplates;
  adopted: Array<[string, string, string | null]>;
}

/** Every team may use every template here: team scoping is the e2e test's (and template-teams.ts's) concern. */
function teams(adopted: TestNode["adopted"]): TemplateTeams {
  return {
    ownerOf: () => ({ kind: "template", team: "team-1" }),
    adopt: (kind, id, team) => void adopted.push([kind, id, team]),
    mayUse: () => true,
  };
}

async function node(name: string): Promise<TestNode> {
  const root = mkdtempSync(join(tmpdir(), `burrow-ct-${name}-`));
  dirs.push(root);
  const store = new TemplateStore(join(root, "templates"), join(root, "state-layers"));
  await store.load();
  // Each node has its own base, under a layer id of its own, as `burrow up` makes it.
  const baseLayer = `base-${name}`;
  mkdirSync(store.layerPath(baseLayer));
  writeFileSync(join(store.layerPath(baseLayer), "os-release"), `base of ${name}\n`);
  await store.save({ templateId: "base", aliases: ["base"], layers: [baseLayer], defaults: { cpuCount: 1, memoryMB: 256 } as never, createdAt: new Date().toISOString() });
  const adopted: TestNode["adopted"] = [];
  const templates = await ClusterTemplates.open({
    nc,
    replicas: 1,
    nodeName: name,
    local: store,
    teams: teams(adopted),
    deleteLocal: (id) => store.remove(id),
    shipped: new Set(["base"]),
    intervalMs: 200,
    logger,
  });
  nodes.push(templates);
  return { store, root, templates, adopted };
}

/** A layer with every kind of entry overlayfs reads. */
function makeLayer(dir: string): void {
  mkdirSync(dir);
  mkdirSync(join(dir, "etc"));
  writeFileSync(join(dir, "etc", "greeting"), "hello from a RUN step\n");
  chownSync(join(dir, "etc", "greeting"), 1234, 5678);
  chmodSync(join(dir, "etc", "greeting"), 0o640);
  execFileSync("setfattr", ["-n", "user.burrow", "-v", "kept", join(dir, "etc", "greeting")]);
  mkdirSync(join(dir, "opaque"));
  execFileSync("setfattr", ["-n", "trusted.overlay.opaque", "-v", "y", join(dir, "opaque")]);
  execFileSync("mknod", [join(dir, "etc", "removed"), "c", "0", "0"]);
  symlinkSync("greeting", join(dir, "etc", "link"));
  linkSync(join(dir, "etc", "greeting"), join(dir, "etc", "hard"));
}

function xattr(path: string, name: string): string {
  return execFileSync("getfattr", ["--only-values", "-n", name, path], { encoding: "utf8" });
}

let a: TestNode;
let b: TestNode;
const LAYER = "step-layer-1";

beforeAll(async () => {
  nats = await NatsServerFixture.start();
  nc = await connect({ servers: `nats://${nats.url}` });
  a = await node("a");
  b = await node("b");
  makeLayer(a.store.layerPath(LAYER));
  await a.store.save({
    templateId: "tpl1",
    aliases: ["my-tpl"],
    layers: [LAYER, "base-a"],
    defaults: { cpuCount: 1, memoryMB: 256 } as never,
    createdAt: new Date().toISOString(),
    buildId: "build-1",
  });
  await until(async () => (await (await new Kvm(nc).open(TEMPLATES_BUCKET)).get("tpl1"))?.operation === "PUT");
});

afterAll(async () => {
  for (const t of nodes) await t.close();
  await nc?.close();
  await nats?.stop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function until(check: () => Promise<boolean> | boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("not within the time");
    await new Promise((r) => setTimeout(r, 50));
  }
}

it("archives a directory deterministically", async () => {
  const first = await packLayer(a.store.layerPath(LAYER), join(a.root, "one.tar"));
  const second = await packLayer(a.store.layerPath(LAYER), join(a.root, "two.tar"));
  expect(second.digest).toBe(first.digest);
  expect(readFileSync(join(a.root, "one.tar")).equals(readFileSync(join(a.root, "two.tar")))).toBe(true);
});

it("publishes the template's own layers by digest and its base by name", async () => {
  const entry = await (await new Kvm(nc).open(TEMPLATES_BUCKET)).get("tpl1");
  const record = decodeTemplateRecord(entry!.value);
  expect(record.layers["base-a"]).toEqual({ shipped: "base", index: 0 });
  const source = record.layers[LAYER] as { digest: string };
  expect(source.digest).toMatch(/^[0-9a-f]{64}$/);
  expect(record.team).toBe("team-1");
  const objects = await new Objm(nc).open(LAYERS_STORE);
  expect((await objects.info(source.digest))?.size).toBeGreaterThan(0);
  // The base template is no one's to publish.
  expect(await (await new Kvm(nc).open(TEMPLATES_BUCKET)).get("base")).toBeNull();
});

it("a node without the template fetches it, files intact, stacked on its own base; a second create fetches nothing", async () => {
  expect(b.templates.find("my-tpl")?.templateId).toBe("tpl1");
  // Listed before it is fetched, its team recorded here so that lists and checks scope it.
  expect(b.templates.summaries().map((t) => [t.templateId, t.aliases, t.buildStatus])).toEqual([["tpl1", ["my-tpl"], "ready"]]);
  await until(() => b.adopted.length > 0);
  await b.templates.ensureLocal("my-tpl:default", 1);
  const manifest = b.store.resolve("my-tpl");
  expect(manifest?.layers).toEqual([LAYER, "base-b"]);
  expect(new Set(b.adopted.map((x) => JSON.stringify(x)))).toEqual(new Set([JSON.stringify(["template", "tpl1", "team-1"])]));
  expect(b.templates.summaries()).toEqual([]);
  expect(b.templates.fetchedLayers).toBe(1);
  const layer = b.store.layerPath(LAYER);
  const greeting = lstatSync(join(layer, "etc", "greeting"));
  expect([greeting.uid, greeting.gid, greeting.mode & 0o7777]).toEqual([1234, 5678, 0o640]);
  expect(readFileSync(join(layer, "etc", "greeting"), "utf8")).toBe("hello from a RUN step\n");
  expect(xattr(join(layer, "etc", "greeting"), "user.burrow")).toBe("kept");
  expect(xattr(join(layer, "opaque"), "trusted.overlay.opaque")).toBe("y");
  const whiteout = lstatSync(join(layer, "etc", "removed"));
  expect(whiteout.isCharacterDevice() && whiteout.rdev === 0).toBe(true);
  expect(readlinkSync(join(layer, "etc", "link"))).toBe("greeting");
  expect(lstatSync(join(layer, "etc", "hard")).ino).toBe(greeting.ino);
  expect(greeting.nlink).toBe(2);
  const before = lstatSync(layer).ino;
  await b.templates.ensureLocal("my-tpl", 1);
  expect(b.templates.fetchedLayers).toBe(1);
  expect(lstatSync(layer).ino).toBe(before);
});

it("two creates at once on a node fetch each layer once", async () => {
  const c = await node("c");
  await Promise.all([c.templates.ensureLocal("tpl1", 1), c.templates.ensureLocal("my-tpl", 1)]);
  expect(c.templates.fetchedLayers).toBe(1);
  expect(c.store.get("tpl1")?.layers).toEqual([LAYER, "base-c"]);
});

it("a corrupted object fails the fetch with a clear error and leaves no layer behind", async () => {
  const d = await node("d");
  const record = decodeTemplateRecord((await (await new Kvm(nc).open(TEMPLATES_BUCKET)).get("tpl1"))!.value);
  const digest = (record.layers[LAYER] as { digest: string }).digest;
  const objects = await new Objm(nc).open(LAYERS_STORE);
  const original = await objects.getBlob(digest);
  // Other bytes under the same name: the store's own checksum is theirs, only the name's digest tells.
  await objects.putBlob({ name: digest }, new TextEncoder().encode("not the layer you are looking for".repeat(1000)));
  try {
    await expect(d.templates.ensureLocal("tpl1", 1)).rejects.toThrow(/layer object [0-9a-f]{64} is corrupt/);
    expect(existsSync(d.store.layerPath(LAYER))).toBe(false);
    expect(d.store.get("tpl1")).toBeUndefined();
    expect(readdirSync(join(d.root, "layer-transfers"))).toEqual([]);
  } finally {
    await objects.putBlob({ name: digest }, original);
  }
});

it("deleting the template on its node deletes its record and the copies fetched elsewhere", async () => {
  await a.store.remove("tpl1");
  await until(async () => (await (await new Kvm(nc).open(TEMPLATES_BUCKET)).get("tpl1"))?.operation !== "PUT");
  await until(() => b.store.get("tpl1") === undefined);
});
