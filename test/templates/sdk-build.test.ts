// The official SDK's Template.build against the real server: RUN, COPY, ENV, WORKDIR, USER and a start command
// with a ready check; sandboxes by name, name:tag and id; a failing step; the layer cache.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Sandbox, Template, waitForFile, type LogEntry } from "e2b";
import { afterAll, describe, expect, inject, it } from "vitest";
import { deleteTemplate } from "./delete-template.js";

const env = inject("burrow");
const conn = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl };
const suffix = Math.random().toString(36).slice(2, 8);
const context = mkdtempSync(join(tmpdir(), "burrow-tpl-ctx-"));
writeFileSync(join(context, "app.txt"), "hello from the context\n");
const created: string[] = [];

afterAll(async () => {
  for (const name of new Set(created.map((n) => n.split(":")[0] as string))) await deleteTemplate(env, name);
  rmSync(context, { recursive: true, force: true });
});

function appTemplate(marker: string) {
  return Template({ fileContextPath: context })
    .fromTemplate("base")
    .runCmd("mkdir -p /opt/tool && echo tool > /opt/tool/version", { user: "root" })
    .setWorkdir("/app")
    .copy("app.txt", "/app/")
    .setEnvs({ GREETING: "hi", MARKER: marker })
    .setUser("user")
    .runCmd('echo "$GREETING from $(whoami) in $(pwd)" > /app/run.txt')
    .setStartCmd("sleep 1 && touch /tmp/ready && sleep infinity", waitForFile("/tmp/ready"));
}

async function build(template: ReturnType<typeof appTemplate>, name: string, opts: { tags?: string[] } = {}) {
  const logs: LogEntry[] = [];
  const info = await Template.build(template, name, { ...conn, ...opts, onBuildLogs: (e) => logs.push(e) });
  created.push(name);
  return { info, logs: logs.map((l) => l.message) };
}

describe("Template.build through the official SDK", () => {
  const name = `app-${suffix}`;

  it("builds, and sandboxes by name, name:tag and id see the result", { timeout: 600_000 }, async () => {
    const { info } = await build(appTemplate("1"), `${name}:v1`);
    expect(await Template.exists(name, conn)).toBe(true);
    for (const ref of [name, `${name}:v1`, info.templateId]) {
      const sandbox = await Sandbox.create(ref, conn);
      try {
        expect((await sandbox.commands.run("cat /app/app.txt")).stdout).toBe("hello from the context\n");
        expect((await sandbox.commands.run("cat /app/run.txt")).stdout).toBe("hi from user in /app\n");
        expect((await sandbox.commands.run("cat /opt/tool/version")).stdout).toBe("tool\n");
        expect((await sandbox.commands.run("stat -c %U /app/app.txt")).stdout.trim()).toBe("user");
        expect((await sandbox.commands.run("echo $MARKER")).stdout.trim()).toBe("1");
        // The start command ran and the ready check passed before create returned.
        expect((await sandbox.commands.run("test -f /tmp/ready && echo ready")).stdout.trim()).toBe("ready");
      } finally {
        await sandbox.kill();
      }
    }
  });

  it("an unchanged rebuild runs no step; a one-step change rebuilds from that step", { timeout: 600_000 }, async () => {
    const again = await build(appTemplate("1"), name);
    const ran = (logs: string[]) => logs.filter((l) => /^\[\d+\/\d+\] (RUN|COPY)/.test(l)).length;
    const cached = (logs: string[]) => logs.filter((l) => /^CACHED \[\d+\/\d+\]/.test(l)).length;
    expect(ran(again.logs)).toBe(0);
    expect(cached(again.logs)).toBe(3);
    // MARKER is set before the last RUN only: the RUN before it and the COPY stay cached.
    const changed = await build(appTemplate("2"), name);
    expect(cached(changed.logs)).toBe(2);
    expect(ran(changed.logs)).toBe(1);
  });

  it("a failing step ends the build with its step number and log", { timeout: 600_000 }, async () => {
    const failing = Template().fromTemplate("base").runCmd("echo fine").runCmd("echo about to fail && exit 3");
    const logs: string[] = [];
    const error = await Template.build(failing, `fail-${suffix}`, { ...conn, onBuildLogs: (e) => logs.push(e.message) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/step 2: command failed with exit code 3/);
    expect(logs).toContain("about to fail");
    expect(await Template.exists(`fail-${suffix}`, conn)).toBe(false);
  });

  it("refuses a registry image with the bases that work", { timeout: 120_000 }, async () => {
    const error = await Template.build(Template().fromImage("ubuntu:22.04"), `ubuntu-${suffix}`, conn).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/debian:<suite>/);
  });
});
