// The registry client against a real `docker-registry` on the loopback: references, index resolution to this
// machine's platform, token auth, mirrors, digest checks, and the address guard that keeps pulls off the host's
// own network unless the operator allows it.
import { mkdtempSync, readFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseImageReference } from "../src/templates/bases/registry/image-reference.js";
import { RegistryClient } from "../src/templates/bases/registry/registry-client.js";
import { resolveRemoteImage } from "../src/templates/bases/registry/resolve-remote-image.js";
import { DEFAULT_REGISTRY_OPTIONS } from "../src/templates/bases/registry/registry-options.js";
import { digestOf, RegistryPusher, startRegistry, type TestRegistry } from "../../../test/helpers/oci-registry.js";

describe("image references", () => {
  it("normalises like the Docker CLI", () => {
    expect(parseImageReference("python:3.12-slim")).toEqual({ registry: "docker.io", repository: "library/python", tag: "3.12-slim", digest: undefined });
    expect(parseImageReference("ubuntu")).toMatchObject({ registry: "docker.io", repository: "library/ubuntu", tag: "latest" });
    expect(parseImageReference("oven/bun:1")).toMatchObject({ registry: "docker.io", repository: "oven/bun", tag: "1" });
    expect(parseImageReference("ghcr.io/o/r/x:v1")).toMatchObject({ registry: "ghcr.io", repository: "o/r/x", tag: "v1" });
    expect(parseImageReference("localhost:5000/app")).toMatchObject({ registry: "localhost:5000", repository: "app", tag: "latest" });
    const digest = `sha256:${"a".repeat(64)}`;
    expect(parseImageReference(`127.0.0.1:5000/a/b@${digest}`)).toMatchObject({ registry: "127.0.0.1:5000", repository: "a/b", tag: undefined, digest });
  });

  it("refuses malformed references with the reason", () => {
    expect(() => parseImageReference("Python:3")).toThrow(/lower-case/);
    expect(() => parseImageReference("x@sha256:zz")).toThrow(/digest/);
    expect(() => parseImageReference("a/b:bad tag")).toThrow(/tag/);
    expect(() => parseImageReference("")).toThrow(/1-512/);
  });
});

function configFor(arch: string) {
  return { architecture: arch, os: "linux", config: { Env: ["PATH=/usr/bin:/bin", "FROM_IMAGE=yes"], WorkingDir: "/app", User: "1000" }, rootfs: { type: "layers", diff_ids: [] } };
}

describe("pulling from a registry", () => {
  let plain: TestRegistry;
  let authed: TestRegistry;
  const cacheDir = mkdtempSync("/var/tmp/burrow-registry-client-");
  const layer1 = gzipSync(Buffer.from("layer one (stands in for a tar)"));
  const layer2 = Buffer.from("layer two, uncompressed");

  beforeAll(async () => {
    [plain, authed] = await Promise.all([startRegistry(), startRegistry({ auth: true })]);
    for (const registry of [plain, authed]) {
      const pusher = new RegistryPusher(registry, "test/app");
      const amd = await pusher.pushImage("amd64-only", [
        { mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", data: layer1 },
        { mediaType: "application/vnd.oci.image.layer.v1.tar", data: layer2 },
      ], configFor("amd64"));
      const arm = await pusher.pushImage("arm64-only", [{ mediaType: "application/vnd.oci.image.layer.v1.tar", data: Buffer.from("arm") }], configFor("arm64"));
      await pusher.pushIndex("multi", [
        { ...arm, os: "linux", architecture: "arm64" },
        { ...amd, os: "linux", architecture: "amd64" },
      ]);
    }
    await new RegistryPusher(plain, "library/python").pushImage("3.12-slim", [{ mediaType: "application/vnd.oci.image.layer.v1.tar", data: layer2 }], configFor("amd64"));
  }, 60_000);

  afterAll(async () => {
    await Promise.all([plain?.stop(), authed?.stop()]);
    await rm(cacheDir, { recursive: true, force: true });
  });

  it("resolves an index to linux/amd64 and downloads verified blobs", async () => {
    const client = new RegistryClient({ options: { ...DEFAULT_REGISTRY_OPTIONS, insecure: [plain.host] } });
    const ref = parseImageReference(`${plain.host}/test/app:multi`);
    const image = await resolveRemoteImage(client, ref, { configCacheDir: cacheDir, architecture: "amd64" });
    expect(image.layers.map((l) => l.digest)).toEqual([digestOf(layer1), digestOf(layer2)]);
    expect(image.layers[0]?.mediaType).toBe("application/vnd.oci.image.layer.v1.tar+gzip");
    expect(JSON.parse(image.configText).config.Env).toContain("FROM_IMAGE=yes");
    const file = join(cacheDir, "layer1");
    await client.downloadBlob(ref, digestOf(layer1), file, layer1.length);
    expect(readFileSync(file).equals(layer1)).toBe(true);
    // A blob whose size differs from what the manifest said is refused and not kept.
    await expect(client.downloadBlob(ref, digestOf(layer1), join(cacheDir, "short"), layer1.length - 1)).rejects.toThrow(/larger than its manifest/);
  });

  it("keeps the config by digest, so a second resolve downloads no blob", async () => {
    const client = new RegistryClient({ options: { ...DEFAULT_REGISTRY_OPTIONS, insecure: [plain.host] } });
    const ref = parseImageReference(`${plain.host}/test/app:amd64-only`);
    await resolveRemoteImage(client, ref, { configCacheDir: cacheDir, architecture: "amd64" });
    const before = plain.requests().filter((r) => r.includes("/blobs/")).length;
    await resolveRemoteImage(client, ref, { configCacheDir: cacheDir, architecture: "amd64" });
    expect(plain.requests().filter((r) => r.includes("/blobs/")).length).toBe(before);
  });

  it("names the platforms an image offers when this one is missing", async () => {
    const client = new RegistryClient({ options: { ...DEFAULT_REGISTRY_OPTIONS, insecure: [plain.host] } });
    await expect(
      resolveRemoteImage(client, parseImageReference(`${plain.host}/test/app:multi`), { configCacheDir: cacheDir, architecture: "s390x" }),
    ).rejects.toThrow(/no linux\/s390x variant \(it offers linux\/arm64, linux\/amd64\)/);
  });

  it("answers a registry's token challenge with the build's credentials", async () => {
    const ref = parseImageReference(`${authed.host}/test/app:amd64-only`);
    const options = { ...DEFAULT_REGISTRY_OPTIONS, insecure: [authed.host] };
    const anonymous = new RegistryClient({ options });
    await expect(resolveRemoteImage(anonymous, ref, { configCacheDir: cacheDir })).rejects.toThrow(/not authorized/);
    const wrong = new RegistryClient({ options, credentials: { username: "tester", password: "nope" } });
    await expect(resolveRemoteImage(wrong, ref, { configCacheDir: cacheDir })).rejects.toThrow(/token service .* refused .*check the username and password/);
    const client = new RegistryClient({ options, credentials: authed.credentials! });
    const image = await resolveRemoteImage(client, ref, { configCacheDir: cacheDir, architecture: "amd64" });
    expect(image.layers).toHaveLength(2);
  });

  it("pulls Docker Hub names through a configured mirror", async () => {
    // allowPublic false: were the mirror to fail, nothing may fall back to Docker Hub from a test.
    const client = new RegistryClient({ options: { insecure: [], mirrors: { "docker.io": [`http://${plain.host}`] }, allowPublic: false } });
    const image = await resolveRemoteImage(client, parseImageReference("python:3.12-slim"), { configCacheDir: cacheDir, architecture: "amd64" });
    expect(image.layers.map((l) => l.digest)).toEqual([digestOf(layer2)]);
  });

  it("pulls from nothing but configured registries when public ones are off", async () => {
    const client = new RegistryClient({ options: { ...DEFAULT_REGISTRY_OPTIONS, allowPublic: false } });
    await expect(resolveRemoteImage(client, parseImageReference("ubuntu:22.04"), { configCacheDir: cacheDir })).rejects.toThrow(
      /pulls only from the registries its operator configured .*docker\.io is not one of them/,
    );
  });

  it("does not reach loopback or private registries the operator did not list", async () => {
    const before = plain.requests().length;
    const client = new RegistryClient({ options: DEFAULT_REGISTRY_OPTIONS });
    await expect(
      resolveRemoteImage(client, parseImageReference(`${plain.host}/test/app:multi`), { configCacheDir: cacheDir }),
    ).rejects.toThrow(/BURROW_INSECURE_REGISTRIES/);
    await expect(
      resolveRemoteImage(client, parseImageReference(`localhost:${plain.host.split(":")[1]}/test/app:multi`), { configCacheDir: cacheDir }),
    ).rejects.toThrow(/BURROW_INSECURE_REGISTRIES/);
    expect(plain.requests().length).toBe(before);
  });
});
