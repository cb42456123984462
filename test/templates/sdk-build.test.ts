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
    // The builder's own counters, reported in the build log the status API serves.
    expect(again.logs).toContainEqual(expect.stringMatching(/ready \(0 steps run, 3 cached\)$/));
    // MARKER is set before the last RUN only: the RUN before it and the COPY stay cached.
    const changed = await build(appTemplate("2"), name);
    expect(changed.logs.filter((l) => /^CACHED /.test(l))).toEqual([
      expect.stringMatching(/^CACHED \[1\/6\] RUN mkdir -p \/opt\/tool/),
      expect.stringMatching(/^CACHED \[3\/6\] COPY app\.txt/),
    ]);
    expect(changed.logs.filter((l) => /^\[\d+\/\d+\] (RUN|COPY)/.test(l))).toEqual([expect.stringMatching(/^\[6\/6\] RUN echo "\$GREETING/)]);
    expect(changed.logs).toContainEqual(expect.stringMatching(/ready \(1 steps run, 2 cached\)$/));
    const sandbox = await Sandbox.create(name, conn);
    try {
      expect((await sandbox.commands.run("echo $MARKER")).stdout.trim()).toBe("2");
    } finally {
      await sandbox.kill();
    }
    // skipCache: every step runs again.
    const forced = await Template.build(appTemplate("2"), name, { ...conn, skipCache: true, onBuildLogs: () => undefined });
    const status = await Template.getBuildStatus(forced, { ...conn });
    const messages = status.logEntries.map((e) => e.message);
    expect(ran(messages)).toBe(3);
    expect(cached(messages)).toBe(0);
  });

  it("a failing step ends the build with status error, its step number and log", { timeout: 600_000 }, async () => {
    const failing = Template().fromTemplate("base").runCmd("echo fine").runCmd("echo about to fail && exit 3").runCmd("echo never");
    const failName = `fail-${suffix}`;
    // Through the status API, the way buildInBackground users see it.
    const started = await Template.buildInBackground(failing, failName, conn);
    let status = await Template.getBuildStatus(started, conn);
    const entries = [...status.logEntries];
    for (let i = 0; (status.status === "building" || status.status === "waiting") && i < 1500; i++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      status = await Template.getBuildStatus(started, { ...conn, logsOffset: entries.length });
      entries.push(...status.logEntries);
    }
    expect(status.status).toBe("error");
    expect(status.reason?.step).toBe("2");
    expect(status.reason?.message).toMatch(/step 2: command failed with exit code 3/);
    expect(entries.some((e) => e.message === "about to fail")).toBe(true);
    expect(entries.some((e) => /echo never/.test(e.message))).toBe(false);
    // The wire entries carry the step each line belongs to (the SDK's LogEntry drops it).
    const raw = (await (
      await fetch(`${env.apiUrl}/templates/${started.templateId}/builds/${started.buildId}/status?logsOffset=0`, {
        headers: { "x-api-key": env.apiKey },
      })
    ).json()) as { status: string; logEntries: { message: string; step?: string; level: string }[]; reason: { step: string } };
    expect(raw.logEntries.find((e) => e.message === "about to fail")?.step).toBe("2");
    expect(raw.logEntries.find((e) => e.level === "error")).toMatchObject({ step: "2" });
    expect(await Template.exists(failName, conn)).toBe(false);

    // And through Template.build: a BuildError with the same message, the step's output in the logs.
    const logs: string[] = [];
    const error = await Template.build(failing, failName, { ...conn, onBuildLogs: (e) => logs.push(e.message) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/step 2: command failed with exit code 3/);
    expect(logs).toContain("about to fail");
    expect(await Template.exists(failName, conn)).toBe(false);
  });

  it("refuses a registry its operator did not allow (this server has public registries off), naming them", { timeout: 120_000 }, async () => {
    const error = await Template.build(Template().fromImage("ubuntu:22.04"), `ubuntu-${suffix}`, conn).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    expect(message).toMatch(/pulls only from the registries its operator configured/);
    expect(message).toMatch(/BURROW_REGISTRY_MIRRORS/);
    expect(message).toMatch(/docker\.io is not one of them/);
    expect(await Template.exists(`ubuntu-${suffix}`, conn)).toBe(false);
  });

  it("refuses an unknown base template", { timeout: 120_000 }, async () => {
    const error = await Template.build(Template().fromTemplate(`nope-${suffix}`), `nope-child-${suffix}`, conn).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(new RegExp(`base template 'nope-${suffix}' not found`));
  });
});
