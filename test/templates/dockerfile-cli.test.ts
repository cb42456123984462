// A Dockerfile built through the CLI (`burrow template build -f`), then used by the official SDK.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { Sandbox } from "e2b";
import { afterAll, describe, expect, inject, it } from "vitest";

const run = promisify(execFile);
const env = inject("burrow");
const cli = resolve("packages/cli/dist/main.js");
const dir = mkdtempSync(join(tmpdir(), "burrow-dockerfile-"));
const name = `df-${Math.random().toString(36).slice(2, 8)}`;
const cliEnv = { ...process.env, E2B_API_KEY: env.apiKey, E2B_API_URL: env.apiUrl, E2B_SANDBOX_URL: env.sandboxUrl };

afterAll(async () => {
  await run(process.execPath, [cli, "template", "delete", name], { env: cliEnv }).catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

describe("burrow template build -f Dockerfile", () => {
  it("builds and the template lists and runs", { timeout: 600_000 }, async () => {
    writeFileSync(join(dir, "notes.md"), "# notes\n");
    writeFileSync(
      join(dir, "Dockerfile"),
      [
        "# a comment line",
        "FROM debian:bookworm",
        "ARG WHO=docker",
        "ENV APP_HOME=/srv/app",
        "WORKDIR $APP_HOME",
        "COPY notes.md ./",
        "RUN echo built-by-$WHO > marker \\",
        "    && chown user marker",
        "USER user",
        'CMD ["sh", "-c", "echo started-as-$(whoami) > /tmp/cmd-ran; exec sleep infinity"]',
      ].join("\n"),
    );
    const built = await run(
      process.execPath,
      [cli, "template", "build", "-f", join(dir, "Dockerfile"), "--name", name, "--ready-cmd", "test -s /tmp/cmd-ran"],
      { env: cliEnv },
    );
    expect(built.stdout).toMatch(/\[\d+\/\d+\] RUN echo built-by/);
    expect(built.stdout).toMatch(new RegExp(`built ${name} \\(template \\w+`));
    const listed = await run(process.execPath, [cli, "template", "list", "--json"], { env: cliEnv });
    expect((JSON.parse(listed.stdout) as { names: string }[]).some((t) => t.names.split(",").includes(name))).toBe(true);
    const sandbox = await Sandbox.create(name, { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl });
    try {
      expect((await sandbox.commands.run("cat /srv/app/marker /srv/app/notes.md")).stdout).toBe("built-by-docker\n# notes\n");
      expect((await sandbox.commands.run("stat -c %U /srv/app/marker; whoami; pwd; echo $APP_HOME")).stdout).toBe("user\nuser\n/srv/app\n/srv/app\n");
      // CMD is the start command: it ran (as the final USER) before create returned.
      expect((await sandbox.commands.run("cat /tmp/cmd-ran")).stdout).toBe("started-as-user\n");
    } finally {
      await sandbox.kill();
    }
    // A rebuild of the unchanged Dockerfile comes from the cache.
    const rebuilt = await run(process.execPath, [cli, "template", "build", "-f", join(dir, "Dockerfile"), "--name", name], { env: cliEnv });
    expect(rebuilt.stdout).toMatch(/CACHED \[\d+\/\d+\] RUN echo built-by/);
    // delete through the CLI; the list no longer shows it.
    await run(process.execPath, [cli, "template", "delete", name], { env: cliEnv });
    const after = await run(process.execPath, [cli, "template", "list", "--json"], { env: cliEnv });
    expect((JSON.parse(after.stdout) as { names: string }[]).some((t) => t.names.split(",").includes(name))).toBe(false);
  });

  it("an unsupported instruction fails with its line number", { timeout: 60_000 }, async () => {
    writeFileSync(join(dir, "Bad.Dockerfile"), "FROM debian:bookworm\nRUN true\nHEALTHCHECK CMD true\n");
    const error = await run(process.execPath, [cli, "template", "build", "-f", join(dir, "Bad.Dockerfile"), "--name", `${name}-bad`], { env: cliEnv }).catch((e: unknown) => e);
    expect((error as { code: number }).code).not.toBe(0);
    expect((error as { stderr: string }).stderr).toMatch(/line 3: unsupported instruction HEALTHCHECK/);
  });
});
