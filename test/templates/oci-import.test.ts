// An OCI image tarball, built here with tar from the base template's own files, imported as a base.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Sandbox, Template } from "e2b";
import { afterAll, describe, expect, inject, it } from "vitest";
import { deleteTemplate } from "./delete-template.js";

const env = inject("burrow");
const conn = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl };
const dir = mkdtempSync("/var/tmp/burrow-oci-");
const name = `oci-${Math.random().toString(36).slice(2, 8)}`;

afterAll(async () => {
  await deleteTemplate(env, name);
  rmSync(dir, { recursive: true, force: true });
});

function blob(layout: string, data: Buffer) {
  const hex = createHash("sha256").update(data).digest("hex");
  writeFileSync(join(layout, "blobs/sha256", hex), data);
  return { digest: `sha256:${hex}`, size: data.length };
}

describe("OCI image import", () => {
  it("builds from a local OCI tarball with whiteouts honoured", { timeout: 600_000 }, async () => {
    // Layer 1: the base template's root filesystem (any Debian rootfs works; this one is already on disk).
    const base = JSON.parse(readFileSync(join(env.stateDir, "templates", `${(await baseTemplateId())}.json`), "utf8")) as { layers: string[] };
    const layout = join(dir, "layout");
    mkdirSync(join(layout, "blobs/sha256"), { recursive: true });
    execFileSync("tar", ["--numeric-owner", "-cf", join(dir, "l1.tar"), "-C", join(env.stateDir, "layers", base.layers[0] as string), "."]);
    const l2 = join(dir, "l2");
    mkdirSync(join(l2, "etc"), { recursive: true });
    writeFileSync(join(l2, "etc/from-oci"), "yes\n");
    writeFileSync(join(l2, "etc/.wh.motd"), "");
    execFileSync("tar", ["--owner=0", "--group=0", "-czf", join(dir, "l2.tgz"), "-C", l2, "."]);
    const layers = [blob(layout, readFileSync(join(dir, "l1.tar"))), blob(layout, readFileSync(join(dir, "l2.tgz")))];
    const config = blob(layout, Buffer.from(JSON.stringify({ config: { Env: ["FROM_OCI=1"], User: "user", WorkingDir: "/home/user" } })));
    const manifest = blob(layout, Buffer.from(JSON.stringify({ schemaVersion: 2, config, layers })));
    writeFileSync(join(layout, "oci-layout"), '{"imageLayoutVersion":"1.0.0"}');
    writeFileSync(join(layout, "index.json"), JSON.stringify({ schemaVersion: 2, manifests: [manifest] }));
    const tarball = join(dir, "image.tar");
    execFileSync("tar", ["-cf", tarball, "-C", layout, "."]);

    await Template.build(Template().fromImage(`oci-archive:${tarball}`).runCmd("echo layered > /tmp/step"), name, conn);
    const sandbox = await Sandbox.create(name, conn);
    try {
      expect((await sandbox.commands.run("cat /etc/from-oci /tmp/step")).stdout).toBe("yes\nlayered\n");
      expect((await sandbox.commands.run("test -e /etc/motd && echo present || echo gone")).stdout.trim()).toBe("gone");
      expect((await sandbox.commands.run("echo $FROM_OCI")).stdout.trim()).toBe("1");
    } finally {
      await sandbox.kill();
    }
  });
});

async function baseTemplateId(): Promise<string> {
  const res = await fetch(`${env.apiUrl}/templates/aliases/base`, { headers: { "x-api-key": env.apiKey } });
  return ((await res.json()) as { templateID: string }).templateID;
}
