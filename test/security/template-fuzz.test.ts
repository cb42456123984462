// A bounded fuzz of the template build API with generated archives: build contexts (COPY) and image layers
// (fromImage) made of symlink and hardlink chains, whiteouts, absolute and `..` paths and long names, aimed at
// a canary directory outside the server, at another template's layer and at the layers root. Every build ends
// as ready or error, no error message carries a host path, the server keeps answering, and nothing outside the
// directory a build unpacks into is touched. The seed is fixed (BURROW_FUZZ_SEED picks another); a failure
// names the case so it can be replayed.
import { createHash } from "node:crypto";
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Template } from "e2b";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { api, buildWithCopy, deleteTemplates, rawTar, requestBuild, sdkFilesHash, startAndWait, type TarEntry } from "./template-rest.js";

const env = inject("burrow");
const conn = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl };
const seed = Number(process.env.BURROW_FUZZ_SEED ?? 20_240_611);
const CONTEXT_CASES = Number(process.env.BURROW_FUZZ_CASES ?? 40);
const IMAGE_CASES = Math.ceil(CONTEXT_CASES / 2.5);
/** BURROW_FUZZ_VERBOSE=1 prints every case and its outcome. */
const verbose = process.env.BURROW_FUZZ_VERBOSE === "1";
const suffix = Math.random().toString(36).slice(2, 8);
const created = new Set<string>();
const canary = mkdtempSync("/var/tmp/burrow-fuzz-canary-");
const images = mkdtempSync(join(env.imageDir, "fuzz-"));
const ctx = mkdtempSync("/var/tmp/burrow-fuzz-ctx-");
let victimLayer = "";

/** mulberry32: small, seedable, good enough to pick cases. */
function prng(s: number): () => number {
  let a = s >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

beforeAll(async () => {
  mkdirSync(join(canary, "dir"), { recursive: true });
  writeFileSync(join(canary, "file.txt"), "canary\n");
  writeFileSync(join(canary, "dir/inner.txt"), "inner canary\n");
  writeFileSync(join(ctx, "secret.txt"), `fuzz victim ${suffix}\n`);
  const victim = `fuzz-victim-${suffix}`;
  created.add(victim);
  const built = await Template.build(Template({ fileContextPath: ctx }).fromTemplate("base").copy("secret.txt", "/home/user/"), victim, conn);
  const manifest = JSON.parse(readFileSync(join(env.stateDir, "templates", `${built.templateId}.json`), "utf8")) as { layers: string[] };
  victimLayer = manifest.layers[0] as string;
}, 300_000);

afterAll(async () => {
  await deleteTemplates(env, created);
  for (const dir of [canary, images, ctx]) rmSync(dir, { recursive: true, force: true });
});

/** Everything about a tree that a stray write, move, chown or chmod would change. */
function snapshot(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (path: string, rel: string) => {
    const st = lstatSync(path);
    let what = `${st.mode.toString(8)} ${st.uid}:${st.gid} ${st.size} ${st.mtimeMs}`;
    if (st.isSymbolicLink()) what += ` -> ${readlinkSync(path)}`;
    else if (st.isFile()) what += ` ${createHash("sha256").update(readFileSync(path)).digest("hex")}`;
    out[rel] = what;
    if (st.isDirectory()) for (const name of readdirSync(path).sort()) walk(join(path, name), `${rel}/${name}`);
  };
  walk(root, "");
  return out;
}

function outsideState(): Record<string, unknown> {
  const layers = join(env.stateDir, "layers");
  return {
    canary: snapshot(canary),
    victim: snapshot(join(layers, victimLayer)),
    layersRoot: lstatSync(layers).isSymbolicLink() ? readlinkSync(layers) : "dir",
    stateTop: readdirSync(env.stateDir).sort(),
  };
}

/** Host paths an error message must not reveal (the scratch and unpack directories, the canary). */
function leaksHostPath(message: string, ...userStrings: string[]): boolean {
  let rest = message;
  for (const s of userStrings) if (s !== "") rest = rest.replaceAll(s, "");
  return rest.includes(env.stateDir) || rest.includes("/.tmp-") || rest.includes(canary) || rest.includes("/unpack");
}

function generator(random: () => number) {
  const pick = <T,>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
  const names = ["a", "b", "l", "m", "n", "sub", "..", ".", ".wh..", ".wh.", ".wh.a", ".wh..wh..opq", "ü nï", "x".repeat(120), "y".repeat(255)];
  const segment = () => (random() < 0.88 ? pick(["a", "b", "l", "m", "n", "sub", "f.txt"]) : pick(names));
  const path = () => {
    const depth = 1 + Math.floor(random() * 3);
    const p = Array.from({ length: depth }, segment).join("/");
    // Absolute and `./` entry paths are rarer: the first one ends a case at unpacking.
    return random() < 0.03 ? `/${p}` : random() < 0.05 ? `./${p}` : p;
  };
  const escapes = [
    "..",
    "../..",
    "../../..",
    "l/..",
    "m/../..",
    "/",
    canary,
    `${canary}/dir`,
    `${canary}/file.txt`,
    `../../../${victimLayer}/home/user`,
    `../../../../layers/${victimLayer}`,
    "/etc",
    "/etc/passwd",
  ];
  const entries = (): TarEntry[] => {
    const list: TarEntry[] = [];
    const count = 1 + Math.floor(random() * 10);
    for (let i = 0; i < count; i++) {
      const kind = random();
      const earlier = list.length > 0 ? pick(list).path.replace(/\/$/, "") : "a";
      if (kind < 0.2) list.push({ path: `${path()}/`, type: "Directory" });
      else if (kind < 0.45) list.push({ path: path(), body: `file ${i} ${"z".repeat(Math.floor(random() * 2000))}` });
      else if (kind < 0.8) {
        const target = random() < 0.6 ? pick(escapes) : random() < 0.5 ? `${earlier}/..` : path();
        list.push({ path: path(), type: "SymbolicLink", linkpath: target });
      } else if (kind < 0.92) {
        const target = pick([earlier, `${earlier}/f.txt`, "../f.txt", `${canary}/file.txt`, "/etc/passwd", `l/${earlier}`]);
        list.push({ path: path(), type: "Link", linkpath: target });
      } else {
        // Writes through a link made just before.
        const link = path();
        list.push({ path: link, type: "SymbolicLink", linkpath: pick(escapes) });
        list.push({ path: `${link}/${pick(["file.txt", "planted", "inner.txt"])}`, body: "planted\n" });
      }
    }
    return list;
  };
  return { pick, path, entries, escapes };
}

describe("template API fuzz", () => {
  it(`COPY of generated build contexts (seed ${seed}, ${CONTEXT_CASES} cases)`, { timeout: 1_200_000 }, async () => {
    const random = prng(seed);
    const gen = generator(random);
    const before = outsideState();
    let ready = 0;
    for (let i = 0; i < CONTEXT_CASES; i++) {
      const entries = gen.entries();
      const existing = entries.map((e) => e.path.replace(/\/$/, ""));
      const links = entries.filter((e) => e.type === "SymbolicLink").map((e) => e.path);
      const src = gen.pick([
        gen.pick(existing),
        gen.pick(existing),
        links.length > 0 ? `${gen.pick(links)}/${gen.pick(["file.txt", "dir/inner.txt", `${victimLayer}/home/user/secret.txt`, "layers", "passwd"])}` : "a",
        "*",
        "a/*",
        ".",
        "../x",
        gen.path(),
      ]);
      const dest = gen.pick(["/tmp/", "/home/user/x", "/home/user/", "/tmp/f", "/", "/etc/", "/bin/", "rel/dir/"]);
      const hash = random() < 0.85 ? sdkFilesHash(src, dest, entries) : createHash("sha256").update(`random ${i}`).digest("hex");
      const name = `fuzz-ctx-${suffix}-${i}`;
      created.add(name);
      const label = `case ${i} (seed ${seed}): src=${JSON.stringify(src)} dest=${dest} entries=${JSON.stringify(entries.map((e) => [e.type ?? "File", e.path, e.linkpath]))}`;
      const result = await buildWithCopy(env, name, { archive: rawTar(entries), src, dest, hash });
      if (verbose) process.stderr.write(`${label}\n  → ${result.status} ${result.reason?.message ?? ""}\n`);
      expect(["ready", "error"], label).toContain(result.status);
      if (result.status === "ready") ready++;
      else expect(leaksHostPath(result.reason?.message ?? "", src, dest), `${label}: ${result.reason?.message}`).toBe(false);
      expect((await api(env, "GET", "/health")).status, label).toBe(200);
      if (i % 10 === 9) expect(outsideState(), label).toEqual(before);
    }
    expect(outsideState()).toEqual(before);
    // The generator must also produce contexts that build, or it tests only the front door.
    expect(ready).toBeGreaterThan(0);
  });

  it(`fromImage of generated image layers (seed ${seed}, ${IMAGE_CASES} cases)`, { timeout: 1_200_000 }, async () => {
    const random = prng(seed + 1);
    const gen = generator(random);
    const before = outsideState();
    let ready = 0;
    for (let i = 0; i < IMAGE_CASES; i++) {
      const layout = join(images, `layout-${i}`);
      mkdirSync(join(layout, "blobs/sha256"), { recursive: true });
      const blob = (data: Buffer, mediaType: string) => {
        const hex = createHash("sha256").update(data).digest("hex");
        writeFileSync(join(layout, "blobs/sha256", hex), data);
        return { mediaType, digest: `sha256:${hex}`, size: data.length };
      };
      const layerEntries = [gen.entries(), ...(random() < 0.5 ? [gen.entries()] : [])];
      const layers = layerEntries.map((e) => blob(rawTar(e), "application/vnd.oci.image.layer.v1.tar"));
      const config = blob(Buffer.from(JSON.stringify({ config: { Env: ["A=1"] } })), "application/vnd.oci.image.config.v1+json");
      const manifest = blob(Buffer.from(JSON.stringify({ schemaVersion: 2, config, layers })), "application/vnd.oci.image.manifest.v1+json");
      writeFileSync(join(layout, "index.json"), JSON.stringify({ schemaVersion: 2, manifests: [manifest] }));
      const name = `fuzz-img-${suffix}-${i}`;
      created.add(name);
      const label = `image case ${i} (seed ${seed}): ${JSON.stringify(layerEntries.map((l) => l.map((e) => [e.type ?? "File", e.path, e.linkpath])))}`;
      const ids = await requestBuild(env, name);
      const result = await startAndWait(env, ids, { fromImage: `oci:${layout}`, steps: [] });
      if (verbose) process.stderr.write(`${label}\n  → ${result.status} ${result.reason?.message ?? ""}\n`);
      expect(["ready", "error"], label).toContain(result.status);
      if (result.status === "ready") ready++;
      else expect(leaksHostPath(result.reason?.message ?? "", layout), `${label}: ${result.reason?.message}`).toBe(false);
      expect((await api(env, "GET", "/health")).status, label).toBe(200);
    }
    expect(outsideState()).toEqual(before);
    expect(ready).toBeGreaterThan(0);
  });
});
