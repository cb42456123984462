// More ways in: the SDK's template file given to `burrow template build FILE` (.mjs and .ts), the SDK's
// fromDockerfile through Template.build, and start commands that never become ready or die at once.
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { Sandbox, Template, waitForFile } from "e2b";
import { afterAll, describe, expect, inject, it } from "vitest";
import { deleteTemplate } from "./delete-template.js";

const run = promisify(execFile);
const env = inject("burrow");
const conn = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl };
const cli = resolve("packages/cli/dist/main.js");
const cliEnv = { ...process.env, E2B_API_KEY: env.apiKey, E2B_API_URL: env.apiUrl, E2B_SANDBOX_URL: env.sandboxUrl };
const suffix = Math.random().toString(36).slice(2, 8);
// Outside the repository on purpose: no node_modules/e2b next to the template files.
const dir = mkdtempSync(join(tmpdir(), "burrow-more-inputs-"));
const built = new Set<string>();

afterAll(async () => {
  for (const name of built) await deleteTemplate(env, name);
  rmSync(dir, { recursive: true, force: true });
});

const cliRun = (args: string[]) => run(process.execPath, [cli, ...args], { env: cliEnv });
const cliFail = async (args: string[]) => {
  const error = (await cliRun(args).then(
    () => undefined,
    (e: unknown) => e,
  )) as { code: number; stderr: string } | undefined;
  expect(error, `burrow ${args.join(" ")} should fail`).toBeDefined();
  return error as { code: number; stderr: string };
};

async function listedNames(): Promise<string[]> {
  const listed = await cliRun(["template", "list", "--json"]);
  return (JSON.parse(listed.stdout) as { names: string }[]).flatMap((t) => t.names.split(","));
}

describe("burrow template build FILE (the SDK's template file)", () => {
  it("builds an .mjs module whose default export is a Template", { timeout: 600_000 }, async () => {
    const name = `mjs-${suffix}`;
    writeFileSync(join(dir, "hello.txt"), "hello from the mjs context\n");
    writeFileSync(
      join(dir, "app.template.mjs"),
      [
        'import { Template } from "e2b";',
        "export default Template()",
        '  .fromTemplate("base")',
        '  .copy("hello.txt", "/opt/hello.txt")',
        '  .runCmd("echo from-mjs-$(whoami) > /opt/marker", { user: "root" })',
        '  .setEnvs({ FLAVOUR: "mjs" });',
      ].join("\n"),
    );
    built.add(name);
    const out = await cliRun(["template", "build", join(dir, "app.template.mjs"), "--name", name]);
    expect(out.stdout).toMatch(/\[\d+\/\d+\] RUN echo from-mjs/);
    expect(out.stdout).toMatch(new RegExp(`built ${name} \\(template \\w+`));
    expect(await listedNames()).toContain(name);
    const sandbox = await Sandbox.create(name, conn);
    try {
      expect((await sandbox.commands.run("cat /opt/marker /opt/hello.txt; echo $FLAVOUR")).stdout).toBe(
        "from-mjs-root\nhello from the mjs context\nmjs\n",
      );
    } finally {
      await sandbox.kill();
    }
    await cliRun(["template", "delete", name]);
    expect(await listedNames()).not.toContain(name);
    // No temporary bundle left next to the source.
    expect(readdirSync(dir).filter((f) => f.startsWith(".burrow-template-"))).toEqual([]);
  });

  it("builds a .ts file (type annotations, a relative .ts import), transpiled on the fly", { timeout: 600_000 }, async () => {
    const name = `ts-${suffix}`;
    writeFileSync(join(dir, "helper.ts"), 'export const flavour: string = "typescript";\n');
    writeFileSync(
      join(dir, "app.template.ts"),
      [
        'import { Template, type TemplateClass } from "e2b";',
        'import { flavour } from "./helper.js";',
        "interface Options { marker: string }",
        "const options: Options = { marker: `from-${flavour}` };",
        "export const template: TemplateClass = Template()",
        '  .fromTemplate("base")',
        "  .runCmd(`echo ${options.marker} > /home/user/marker`)",
        '  .setStartCmd("touch /tmp/started && sleep infinity", "test -f /tmp/started");',
      ].join("\n"),
    );
    built.add(name);
    const out = await cliRun(["template", "build", join(dir, "app.template.ts"), "--name", name]);
    expect(out.stdout).toMatch(new RegExp(`built ${name} \\(template \\w+`));
    const sandbox = await Sandbox.create(name, conn);
    try {
      expect((await sandbox.commands.run("cat /home/user/marker; test -f /tmp/started && echo started")).stdout).toBe(
        "from-typescript\nstarted\n",
      );
    } finally {
      await sandbox.kill();
    }
    await cliRun(["template", "delete", name]);
    expect(await listedNames()).not.toContain(name);
    expect(readdirSync(dir).filter((f) => f.startsWith(".burrow-template-"))).toEqual([]);
  });

  it("a .ts file that does not compile, or exports no Template, fails clearly", { timeout: 60_000 }, async () => {
    writeFileSync(join(dir, "broken.ts"), 'import { Template } from "e2b";\nexport default Template(.fromTemplate("base");\n');
    const broken = await cliFail(["template", "build", join(dir, "broken.ts"), "--name", `broken-${suffix}`]);
    expect(broken.code).not.toBe(0);
    expect(broken.stderr).toMatch(/cannot compile .*broken\.ts/);
    expect(broken.stderr).toMatch(/broken\.ts:2:/);
    writeFileSync(join(dir, "empty.mjs"), "export const nothing = 1;\n");
    const empty = await cliFail(["template", "build", join(dir, "empty.mjs"), "--name", `empty-${suffix}`]);
    expect(empty.stderr).toMatch(/empty\.mjs must export an e2b Template/);
    expect(readdirSync(dir).filter((f) => f.startsWith(".burrow-template-"))).toEqual([]);
  });
});

describe("Template().fromDockerfile through Template.build", () => {
  it("builds RUN, ENV, ARG, WORKDIR, COPY, USER and CMD; sandboxes see them", { timeout: 600_000 }, async () => {
    const name = `sdkdf-${suffix}`;
    const context = mkdtempSync(join(dir, "ctx-"));
    writeFileSync(join(context, "notes.md"), "# notes from the context\n");
    const dockerfile = [
      "FROM e2bdev/base",
      "ARG WHO=sdk",
      "ENV APP_HOME=/srv/app GREETING=hello",
      "WORKDIR /srv/app",
      "COPY notes.md ./",
      "RUN echo built-by-$WHO-as-$(whoami) > marker && chown user marker",
      "USER user",
      "RUN echo $GREETING-from-$(whoami) > /tmp/as-user",
      // Shell form: the SDK joins an exec form's array with spaces, which loses its quoting.
      "CMD echo started-as-$(whoami)-in-$(pwd) > /tmp/cmd-ran; exec sleep infinity",
    ].join("\n");
    built.add(name);
    const logs: string[] = [];
    const info = await Template.build(Template({ fileContextPath: context }).fromDockerfile(dockerfile), name, {
      ...conn,
      onBuildLogs: (e) => logs.push(e.message),
    });
    expect(info.name).toBe(name);
    expect(logs).toContainEqual(expect.stringMatching(/^\[\d+\/\d+\] COPY notes\.md/));
    expect(logs).toContainEqual(expect.stringMatching(/^\[\d+\/\d+\] RUN echo built-by-\$WHO/));
    const sandbox = await Sandbox.create(name, conn);
    try {
      expect((await sandbox.commands.run("cat /srv/app/marker /srv/app/notes.md")).stdout).toBe(
        "built-by-sdk-as-root\n# notes from the context\n",
      );
      // The RUN after USER ran as that user.
      expect((await sandbox.commands.run("cat /tmp/as-user")).stdout).toBe("hello-from-user\n");
      expect((await sandbox.commands.run("stat -c %U /srv/app/marker; whoami; pwd; echo $APP_HOME $GREETING $WHO")).stdout).toBe(
        "user\nuser\n/srv/app\n/srv/app hello sdk\n",
      );
      // CMD is the start command: it ran, as the final USER in the final WORKDIR, before create returned.
      expect((await sandbox.commands.run("cat /tmp/cmd-ran")).stdout).toBe("started-as-user-in-/srv/app\n");
    } finally {
      await sandbox.kill();
    }
    await deleteTemplate(env, name);
    expect(await Template.exists(name, conn)).toBe(false);
  });
});

describe("a start command that never becomes ready", () => {
  const sandboxesDir = join(env.stateDir, "sandboxes");

  /** Create must fail; afterwards no sandbox of the template is listed and none of its directories is left. */
  async function expectCreateFails(name: string): Promise<string> {
    const templateId = await templateIdOf(name);
    const before = new Set(readdirSync(sandboxesDir));
    const error = await Sandbox.create(name, conn).then(
      async (sandbox) => {
        await sandbox.kill();
        return undefined;
      },
      (e: unknown) => e as Error,
    );
    expect(error, "Sandbox.create should fail").toBeInstanceOf(Error);
    const listed = await Sandbox.list(conn).nextItems();
    expect(listed.filter((s) => s.templateId === templateId)).toEqual([]);
    // Directories that appeared meanwhile can only be the pools refilling (pooled sandboxes of another template, or
    // prepared ones, which the failed create may have taken): a refill writes its record while its envd starts.
    for (const id of readdirSync(sandboxesDir).filter((d) => !before.has(d))) {
      const recordFile = join(sandboxesDir, id, "sandbox.json");
      for (let i = 0; i < 100 && existsSync(join(sandboxesDir, id)) && !existsSync(recordFile); i++) await new Promise((r) => setTimeout(r, 100));
      if (!existsSync(join(sandboxesDir, id))) continue; // a refill that failed and was cleaned up
      expect(existsSync(recordFile), `leftover sandbox dir ${id}`).toBe(true);
      const record = JSON.parse(readFileSync(recordFile, "utf8")) as { templateId: string; pooled: boolean };
      expect(record).toMatchObject({ pooled: true });
      expect(record.templateId).not.toBe(templateId);
    }
    return (error as Error).message;
  }

  async function templateIdOf(name: string): Promise<string> {
    const res = await fetch(`${env.apiUrl}/templates`, { headers: { "x-api-key": env.apiKey } });
    const templates = (await res.json()) as { templateID: string; aliases: string[] }[];
    const found = templates.find((t) => t.aliases.includes(name));
    expect(found, `template ${name} listed`).toBeDefined();
    return found!.templateID;
  }

  it("a start command that exits at once: create fails with its output", { timeout: 300_000 }, async () => {
    const name = `dies-${suffix}`;
    built.add(name);
    await Template.build(
      Template()
        .fromTemplate("base")
        .setStartCmd("echo going-down-now; echo on-stderr-too >&2; exit 7", waitForFile("/tmp/never-there")),
      name,
      conn,
    );
    const message = await expectCreateFails(name);
    expect(message).toMatch(/start command .* exited with code 7 before the ready check passed/);
    expect(message).toMatch(/going-down-now/);
    expect(message).toMatch(/on-stderr-too/);
    await deleteTemplate(env, name);
  });

  it("a ready check that never passes: create fails after the template's ready timeout", { timeout: 300_000 }, async () => {
    const name = `never-${suffix}`;
    built.add(name);
    await Template.build(
      Template()
        .fromTemplate("base")
        .setEnvs({ BURROW_READY_TIMEOUT_MS: "3000" })
        .setStartCmd("echo server-starting; exec sleep infinity", waitForFile("/tmp/never-there")),
      name,
      conn,
    );
    const message = await expectCreateFails(name);
    expect(message).toMatch(/ready check '\[ -f '?\/tmp\/never-there'? \]' did not pass within 3000 ms/);
    expect(message).toMatch(/server-starting/);
    await deleteTemplate(env, name);
  });

  it("a ready command that hangs is cut off at the template's ready timeout", { timeout: 300_000 }, async () => {
    const name = `hang-${suffix}`;
    built.add(name);
    await Template.build(
      Template()
        .fromTemplate("base")
        .setEnvs({ BURROW_READY_TIMEOUT_MS: "2000" })
        .setStartCmd("echo hang-start; exec sleep infinity", "sleep 600"),
      name,
      conn,
    );
    const message = await expectCreateFails(name);
    expect(message).toMatch(/did not pass within 2000 ms/);
    expect(message).toMatch(/without finishing/);
    expect(message).toMatch(/hang-start/);
    await deleteTemplate(env, name);
  });

  it("an invalid BURROW_READY_TIMEOUT_MS fails the build", { timeout: 120_000 }, async () => {
    const name = `badtimeout-${suffix}`;
    built.add(name);
    const error = await Template.build(
      Template().fromTemplate("base").setEnvs({ BURROW_READY_TIMEOUT_MS: "soon" }).setStartCmd("sleep infinity", "true"),
      name,
      conn,
    ).catch((e: unknown) => e as Error);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/BURROW_READY_TIMEOUT_MS must be a positive number of milliseconds, got 'soon'/);
    expect(await Template.exists(name, conn)).toBe(false);
  });
});
