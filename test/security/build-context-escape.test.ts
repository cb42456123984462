// A build context cannot reach outside itself. The archive below is only relative symbolic links, each
// harmless on its own (a/l → .., a/m → l/.., a/n → m/..); followed on disk from the unpack directory they reach
// the layers root. Before the fix a COPY naming `a/n/<layer>/…` moved another template's file into the
// attacker's template. Now the build fails with an error naming the source as written, revealing nothing about
// host paths, and the other template's file stays where it was.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Sandbox, Template } from "e2b";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { buildWithCopy, deleteTemplates, rawTar, sdkFilesHash, type TarEntry } from "./template-rest.js";

const env = inject("burrow");
const conn = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl };
const suffix = Math.random().toString(36).slice(2, 8);
const victimName = `victim-${suffix}`;
const created = new Set<string>([victimName]);
const ctx = mkdtempSync("/var/tmp/burrow-victim-ctx-");
let secretOnHost = "";
let victimLayer = "";

beforeAll(async () => {
  writeFileSync(join(ctx, "secret.txt"), `the victim's secret ${suffix}\n`);
  const built = await Template.build(Template({ fileContextPath: ctx }).fromTemplate("base").copy("secret.txt", "/home/user/"), victimName, conn);
  const manifest = JSON.parse(readFileSync(join(env.stateDir, "templates", `${built.templateId}.json`), "utf8")) as { layers: string[] };
  victimLayer = manifest.layers[0] as string;
  secretOnHost = join(env.stateDir, "layers", victimLayer, "home/user/secret.txt");
  expect(readFileSync(secretOnHost, "utf8")).toBe(`the victim's secret ${suffix}\n`);
}, 300_000);

afterAll(async () => {
  await deleteTemplates(env, created);
  rmSync(ctx, { recursive: true, force: true });
});

const chain: TarEntry[] = [
  { path: "a/l", type: "SymbolicLink", linkpath: ".." },
  { path: "a/m", type: "SymbolicLink", linkpath: "l/.." },
  { path: "a/n", type: "SymbolicLink", linkpath: "m/.." },
  { path: "a/o", type: "SymbolicLink", linkpath: "n/.." },
  { path: "a/abs", type: "SymbolicLink", linkpath: "/" },
];

async function attack(src: string) {
  const name = `attacker-${suffix}-${created.size}`;
  created.add(name);
  // The files hash is the SDK's formula over what the archive holds: a hostile client can always compute it.
  return buildWithCopy(env, name, { archive: rawTar(chain), src, dest: "/home/user/", hash: sdkFilesHash(src, "/home/user/", chain) });
}

async function victimStillHasItsSecret(): Promise<void> {
  expect(readFileSync(secretOnHost, "utf8")).toBe(`the victim's secret ${suffix}\n`);
  const sandbox = await Sandbox.create(victimName, conn);
  try {
    expect((await sandbox.commands.run("cat /home/user/secret.txt")).stdout).toBe(`the victim's secret ${suffix}\n`);
  } finally {
    await sandbox.kill();
  }
}

describe("COPY with a symlink chain out of the build context", () => {
  it("fails naming the escaping source; the other template's file is untouched and still there", { timeout: 300_000 }, async () => {
    const src = `a/n/${victimLayer}/home/user/secret.txt`;
    const result = await attack(src);
    expect(result.uploadStatus).toBe(200);
    expect(result.status).toBe("error");
    expect(result.reason?.message).toBe(`step 1: COPY source '${src}' leaves the build context`);
    expect(result.reason?.step).toBe("1");
    expect(result.reason?.message).not.toContain(env.stateDir);
    await victimStillHasItsSecret();
  });

  it("answers the same for host paths that exist and paths that do not, also through the data directory", { timeout: 300_000 }, async () => {
    const present = await attack(`a/o/layers/${victimLayer}/home/user/secret.txt`);
    const absent = await attack(`a/o/layers/${victimLayer}/home/user/no-such-file`);
    expect(present.status).toBe("error");
    expect(present.reason?.message.replace("secret.txt", "X")).toBe(absent.reason?.message.replace("no-such-file", "X"));
    // An absolute link names the host root directly.
    const viaRoot = await attack(`a/abs${secretOnHost}`);
    expect(viaRoot.status).toBe("error");
    expect(viaRoot.reason?.message).toBe(`step 1: COPY source 'a/abs${secretOnHost}' leaves the build context through an absolute symbolic link`);
    const missing = await attack(`a/abs${env.stateDir}/no/such/path`);
    expect(missing.reason?.message).toBe(`step 1: COPY source 'a/abs${env.stateDir}/no/such/path' leaves the build context through an absolute symbolic link`);
    await victimStillHasItsSecret();
  });

  it("still copies links that stay inside, and links themselves", { timeout: 300_000 }, async () => {
    const entries: TarEntry[] = [
      { path: "lib/", type: "Directory" },
      { path: "lib/data.txt", body: "inside\n" },
      { path: "via", type: "SymbolicLink", linkpath: "lib" },
      { path: "abs-link", type: "SymbolicLink", linkpath: "/etc/hostname" },
    ];
    const name = `inside-${suffix}`;
    created.add(name);
    const result = await buildWithCopy(env, name, { archive: rawTar(entries), src: "via/data.txt", dest: "/home/user/", hash: sdkFilesHash("via/data.txt", "/home/user/", entries) });
    expect(result.status, JSON.stringify(result.reason)).toBe("ready");
    const links = `links-${suffix}`;
    created.add(links);
    const linked = await buildWithCopy(env, links, { archive: rawTar(entries), src: "abs-link", dest: "/home/user/", hash: sdkFilesHash("abs-link", "/home/user/", entries) });
    expect(linked.status, JSON.stringify(linked.reason)).toBe("ready");
    const sandbox = await Sandbox.create(links, conn);
    try {
      // The link is kept as archived and resolves inside the sandbox.
      expect((await sandbox.commands.run("readlink /home/user/abs-link")).stdout).toBe("/etc/hostname\n");
    } finally {
      await sandbox.kill();
    }
    const copied = await Sandbox.create(name, conn);
    try {
      expect((await copied.commands.run("cat /home/user/data.txt")).stdout).toBe("inside\n");
    } finally {
      await copied.kill();
    }
    expect(existsSync(secretOnHost)).toBe(true);
  });
});
