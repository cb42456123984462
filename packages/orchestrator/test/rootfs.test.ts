// Base template rootfs: apt source discovery, the uid shift, and the cached build itself.
import { existsSync } from "node:fs";
import { chmod, link, lstat, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile, chown } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BurrowError, Code } from "@burrow/protocol";
import {
  findDebianMirror,
  parseDeb822Sources,
  parseSourcesList,
  readAptSources,
  renderSourcesList,
  sourcesForSuite,
} from "../src/rootfs/apt-sources.js";
import { baseRootfsCachePath, buildBaseRootfs, shiftOwnership } from "../src/rootfs/index.js";
import { ensureTestRootfs, TEST_UID_BASE } from "./helpers/base-rootfs.js";

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "burrow-rootfs-test-"));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe("apt sources", () => {
  it("parses one-line and deb822 sources the way apt does", () => {
    expect(
      parseSourcesList(
        "# comment\ndeb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian bookworm main contrib\ndeb-src http://x/ y main\n",
      ),
    ).toEqual([{ uri: "http://mirror.example/debian", suites: ["bookworm"], components: ["main", "contrib"] }]);
    const deb822 = [
      "Types: deb deb-src",
      "URIs: http://a.example/debian http://b.example/debian",
      "Suites: bookworm bookworm-updates",
      "Components: main",
      "Signed-By:",
      " -----BEGIN PGP PUBLIC KEY BLOCK-----",
      " abc",
      "",
      "Types: deb",
      "Enabled: no",
      "URIs: http://disabled.example/debian",
      "Suites: bookworm",
      "Components: main",
      "",
      "Types: deb-src",
      "URIs: http://src.example/debian",
      "Suites: bookworm",
      "Components: main",
    ].join("\n");
    expect(parseDeb822Sources(deb822)).toEqual([
      { uri: "http://a.example/debian", suites: ["bookworm", "bookworm-updates"], components: ["main"] },
      { uri: "http://b.example/debian", suites: ["bookworm", "bookworm-updates"], components: ["main"] },
    ]);
  });

  it("finds the mirror, ignores files apt ignores, and renders the template's sources", async () => {
    const etc = join(scratch, "etc-apt");
    await mkdir(join(etc, "sources.list.d"), { recursive: true });
    await writeFile(join(etc, "sources.list.d", "old.list.disabled"), "deb http://wrong.example/debian bookworm main\n");
    await writeFile(join(etc, "sources.list.d", "other.list"), "deb http://vendor.example/apt nodistro main\n");
    await expect(readAptSources(etc).then((s) => findDebianMirror(s, "bookworm"))).rejects.toMatchObject({ code: Code.FailedPrecondition, reason: "no_mirror" });

    await writeFile(
      join(etc, "sources.list.d", "debian.sources"),
      "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\n" +
        "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\nComponents: main\n",
    );
    const sources = await readAptSources(etc);
    expect(findDebianMirror(sources, "bookworm")).toBe("http://mirror.example/debian");
    expect(renderSourcesList(sourcesForSuite(sources, "bookworm"))).toBe(
      "deb http://mirror.example/debian bookworm main\n" +
        "deb http://mirror.example/debian bookworm-updates main\n" +
        "deb http://mirror.example/debian-security bookworm-security main\n",
    );
  });

  it("finds a mirror on this machine", async () => {
    expect(findDebianMirror(await readAptSources(), "bookworm")).toMatch(/^https?:\/\//);
  });
});

describe("shiftOwnership", () => {
  it("shifts every entry once, keeps setuid bits and does not follow symlinks", async () => {
    const root = join(scratch, "shift");
    await mkdir(join(root, "usr/bin"), { recursive: true });
    await writeFile(join(root, "usr/bin/sudo"), "x");
    await chmod(join(root, "usr/bin/sudo"), 0o4755);
    await writeFile(join(root, "usr/bin/gzip"), "x");
    await link(join(root, "usr/bin/gzip"), join(root, "usr/bin/uncompress"));
    await mkdir(join(root, "home/user"), { recursive: true });
    await chown(join(root, "home/user"), 1000, 1000);
    await writeFile(join(scratch, "outside"), "x");
    await symlink(join(scratch, "outside"), join(root, "link-out"));

    const n = await shiftOwnership(root, { uidBase: 300000, uidCount: 65536 });
    expect(n).toBe(8); // root, usr, bin, sudo, gzip (once for two names), home, user, link-out
    const sudo = await stat(join(root, "usr/bin/sudo"));
    expect([sudo.uid, sudo.gid, sudo.mode & 0o7777]).toEqual([300000, 300000, 0o4755]);
    expect((await stat(join(root, "usr/bin/uncompress"))).uid).toBe(300000);
    expect((await stat(join(root, "home/user"))).uid).toBe(301000);
    expect((await lstat(join(root, "link-out"))).uid).toBe(300000);
    expect((await stat(join(scratch, "outside"))).uid).toBe(0);
  });

  it("refuses owners outside the sandbox range (e.g. an already shifted tree)", async () => {
    const root = join(scratch, "shift-twice");
    await mkdir(root);
    await chown(root, 100000, 100000);
    await expect(shiftOwnership(root, { uidBase: 100000, uidCount: 65536 })).rejects.toMatchObject({ code: Code.InvalidArgument, reason: "unmappable_owner" });
  });
});

describe("buildBaseRootfs", () => {
  let layer: string;

  beforeAll(async () => {
    layer = await ensureTestRootfs();
  });

  it("caches the recipe as a tarball", () => {
    expect(existsSync(baseRootfsCachePath())).toBe(true);
  });

  it("produces Debian with the promised tools, user and sudo, shifted to the sandbox range", async () => {
    for (const bin of ["bash", "python3", "python", "curl", "git", "sudo", "ps", "less", "ip", "getfattr"]) {
      expect(existsSync(join(layer, "usr/bin", bin)) || existsSync(join(layer, "usr/sbin", bin)), bin).toBe(true);
    }
    expect(await readFile(join(layer, "etc/debian_version"), "utf8")).toMatch(/^12\./);
    expect(await readFile(join(layer, "etc/passwd"), "utf8")).toMatch(/^user:x:1000:1000::\/home\/user:\/bin\/bash$/m);
    expect(await readFile(join(layer, "etc/sudoers.d/user"), "utf8")).toContain("user ALL=(ALL:ALL) NOPASSWD:ALL");
    const sudo = await stat(join(layer, "usr/bin/sudo"));
    expect([sudo.uid, sudo.mode & 0o7777]).toEqual([TEST_UID_BASE, 0o4755]);
    expect((await stat(join(layer, "home/user"))).uid).toBe(TEST_UID_BASE + 1000);
    expect((await stat(join(layer, "etc/ssl/certs/ca-certificates.crt"))).size).toBeGreaterThan(1000);
    expect(await readdir(join(layer, "var/lib/apt/lists")).catch(() => [])).toEqual(expect.not.arrayContaining([expect.stringMatching(/Packages/)]));
    expect(await readdir(join(layer, "var/cache/apt/archives")).then((f) => f.filter((x) => x.endsWith(".deb")))).toEqual([]);
    expect((await stat(join(layer, ".burrow"))).isDirectory()).toBe(true);
    expect(await readFile(join(layer, "etc/apt/sources.list"), "utf8")).toMatch(/^deb \S+ bookworm main$/m);
  });

  it("extracts from the cache atomically into a new dir and never overwrites one", async () => {
    const out = join(scratch, "layers", "base-200000");
    await buildBaseRootfs({ outDir: out, uidBase: 200000 });
    expect((await stat(join(out, "etc/passwd"))).uid).toBe(200000);
    expect((await stat(join(out, "home/user"))).uid).toBe(201000);
    expect(await readdir(join(scratch, "layers"))).toEqual(["base-200000"]);
    await expect(buildBaseRootfs({ outDir: out, uidBase: 200000 })).rejects.toBeInstanceOf(BurrowError);
    await expect(buildBaseRootfs({ outDir: out, uidBase: 200000 })).rejects.toMatchObject({ code: Code.AlreadyExists });

    const aborted = join(scratch, "layers", "aborted");
    await expect(buildBaseRootfs({ outDir: aborted, uidBase: 200000, signal: AbortSignal.abort() })).rejects.toMatchObject({
      code: Code.Canceled,
    });
    expect(await readdir(join(scratch, "layers"))).toEqual(["base-200000"]);
  });
});
