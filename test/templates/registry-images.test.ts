// Registry images as template bases, through the official SDK against a server started with a mirror and
// insecure-registry settings: Docker Hub names (fromImage('python:3.12-slim'), fromUbuntuImage, fromNodeImage)
// resolve through the mirror, registry hosts are pulled directly, an index is resolved to linux/amd64, gzip and
// zstd layers and whiteouts are honoured, token auth takes the build's credentials, and a second pull of the same
// image downloads no blob. Registries are real `docker-registry` processes on the loopback; images are built here.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Sandbox, Template } from "e2b";
import { RegistryPusher, startRegistry, type TestRegistry } from "../helpers/oci-registry.js";
import { tarRootfs, writeMinimalRootfs } from "../helpers/minimal-rootfs.js";
import { burrowDown, freePort, startServerProcess, stopServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { newTestInstance } from "../helpers/test-instance.js";

const instance = newTestInstance("registry");
const work = mkdtempSync("/var/tmp/burrow-registry-images-");
let mirror: TestRegistry;
let privateRegistry: TestRegistry;
let server: ServerProcess;
const conn = () => ({ apiKey: server.apiKey, apiUrl: server.url, sandboxUrl: server.url, debug: false });

const CONFIG = {
  architecture: "amd64",
  os: "linux",
  config: { Env: ["PATH=/usr/bin:/bin", "GREETING=from the image config"], WorkingDir: "/app", User: "root" },
  rootfs: { type: "layers", diff_ids: [] },
};

/** Push the test image under `repository:tag` as an index whose amd64 entry has a gzip and a zstd layer. */
async function pushTestImage(registry: TestRegistry, repository: string, tag: string, layers: { base: Buffer; app: Buffer }) {
  const pusher = new RegistryPusher(registry, repository);
  const amd = await pusher.pushImage(`${tag}-amd64`, [
    { mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", data: layers.base },
    { mediaType: "application/vnd.oci.image.layer.v1.tar+zstd", data: layers.app },
  ], CONFIG);
  // An arm64 entry that would fail if chosen: its only layer is not a tar.
  const arm = await pusher.pushImage(`${tag}-arm64`, [{ mediaType: "application/vnd.oci.image.layer.v1.tar", data: Buffer.from("not a tar") }], { ...CONFIG, architecture: "arm64" });
  await pusher.pushIndex(tag, [
    { ...arm, os: "linux", architecture: "arm64" },
    { ...amd, os: "linux", architecture: "amd64" },
  ]);
}

function blobFetches(registry: TestRegistry): number {
  return registry.requests().filter((r) => r.startsWith("GET ") && r.includes("/blobs/")).length;
}

beforeAll(async () => {
  [mirror, privateRegistry] = await Promise.all([startRegistry(), startRegistry({ auth: true })]);
  const rootfs = join(work, "rootfs");
  writeMinimalRootfs(rootfs);
  writeFileSync(join(rootfs, "etc/doomed"), "deleted by the next layer\n");
  tarRootfs(rootfs, join(work, "base.tar"));
  const app = join(work, "app");
  mkdirSync(join(app, "app"), { recursive: true });
  mkdirSync(join(app, "etc"), { recursive: true });
  writeFileSync(join(app, "app/hello.txt"), "hello from a registry image\n");
  writeFileSync(join(app, "etc/.wh.doomed"), "");
  execFileSync("tar", ["--numeric-owner", "--owner=0", "--group=0", "-cf", join(work, "app.tar"), "-C", app, "."]);
  execFileSync("zstd", ["-q", "-f", join(work, "app.tar"), "-o", join(work, "app.tar.zst")]);
  const layers = { base: gzipSync(readFileSync(join(work, "base.tar"))), app: readFileSync(join(work, "app.tar.zst")) };
  for (const name of ["library/python:3.12-slim", "library/ubuntu:22.04", "library/node:lts"]) {
    const [repository, tag] = name.split(":") as [string, string];
    await pushTestImage(mirror, repository, tag, layers);
  }
  await pushTestImage(mirror, "team/app", "v1", layers);
  await pushTestImage(privateRegistry, "private/app", "v1", layers);
  server = await startServerProcess(instance, await freePort(), ["--pool-size", "0"], {
    BURROW_REGISTRY_MIRRORS: `docker.io=http://${mirror.host}`,
    BURROW_INSECURE_REGISTRIES: `${mirror.host},${privateRegistry.host}`,
  });
}, 600_000);

afterAll(async () => {
  if (server) await stopServerProcess(server, "SIGTERM");
  burrowDown(instance);
  rmSync(instance.stateDir, { recursive: true, force: true });
  await Promise.all([mirror?.stop(), privateRegistry?.stop()]);
  rmSync(work, { recursive: true, force: true });
});

async function expectImageContent(templateName: string): Promise<void> {
  const sandbox = await Sandbox.create(templateName, { ...conn(), timeoutMs: 120_000 });
  try {
    expect((await sandbox.commands.run("cat /app/hello.txt")).stdout).toBe("hello from a registry image\n");
    expect((await sandbox.commands.run("echo $GREETING")).stdout).toBe("from the image config\n");
    // The zstd layer's whiteout removed a file of the gzip layer.
    expect((await sandbox.commands.run("ls /etc/doomed 2>&1 || true")).stdout).toMatch(/No such file/);
  } finally {
    await sandbox.kill();
  }
}

describe("registry images", () => {
  it("fromImage('python:3.12-slim') pulls through the Docker Hub mirror, and a second pull downloads no blob", { timeout: 600_000 }, async () => {
    const suffix = Math.random().toString(36).slice(2, 8);
    await Template.build(Template().fromImage("python:3.12-slim"), `py-${suffix}`, conn());
    await expectImageContent(`py-${suffix}`);
    const fetched = blobFetches(mirror);
    await Template.build(Template().fromImage("python:3.12-slim").runCmd("echo second > /second"), `py2-${suffix}`, conn());
    expect(blobFetches(mirror)).toBe(fetched);
    await Template.build(Template().fromUbuntuImage("22.04"), `ubuntu-${suffix}`, conn());
    await Template.build(Template().fromNodeImage(), `node-${suffix}`, conn());
    expect(blobFetches(mirror)).toBe(fetched);
    await expectImageContent(`node-${suffix}`);
  });

  it("a Dockerfile FROM a registry host builds on the pulled image", { timeout: 300_000 }, async () => {
    const suffix = Math.random().toString(36).slice(2, 8);
    const template = Template().fromDockerfile(`FROM ${mirror.host}/team/app:v1\nRUN echo built > /app/built.txt\n`);
    await Template.build(template, `df-${suffix}`, conn());
    const sandbox = await Sandbox.create(`df-${suffix}`, { ...conn(), timeoutMs: 60_000 });
    try {
      expect((await sandbox.commands.run("cat /app/hello.txt /app/built.txt")).stdout).toBe("hello from a registry image\nbuilt\n");
    } finally {
      await sandbox.kill();
    }
  });

  it("token auth takes fromImage's credentials; wrong ones fail the build with a clear reason", { timeout: 300_000 }, async () => {
    const suffix = Math.random().toString(36).slice(2, 8);
    const image = `${privateRegistry.host}/private/app:v1`;
    const wrong = await Template.build(Template().fromImage(image, { username: "tester", password: "wrong" }), `bad-${suffix}`, conn()).catch((e: unknown) => e);
    expect(String((wrong as Error).message)).toMatch(/token service .* refused .*check the username and password/);
    const anonymous = await Template.build(Template().fromImage(image), `anon-${suffix}`, conn()).catch((e: unknown) => e);
    expect(String((anonymous as Error).message)).toMatch(/not authorized/);
    await Template.build(Template().fromImage(image, privateRegistry.credentials!), `private-${suffix}`, conn());
    await expectImageContent(`private-${suffix}`);
  });

  it("an image that does not exist is a build error naming it", { timeout: 120_000 }, async () => {
    const error = await Template.build(Template().fromImage(`${mirror.host}/team/missing:v9`), `missing-${Math.random().toString(36).slice(2, 8)}`, conn()).catch((e: unknown) => e);
    expect(String((error as Error).message)).toMatch(/team\/missing: manifest v9 not found/);
  });
});
