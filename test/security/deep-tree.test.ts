// Nothing a sandbox writes can stop its kill: a tree deeper than PATH_MAX, built by an unprivileged user through
// directory file descriptors, is removed with the rest of the sandbox, and a RUN step that builds one leaves no
// build sandbox or temporary layer behind.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Sandbox, Template } from "e2b";
import { afterAll, describe, expect, inject, it } from "vitest";
import { DEEP_LEVELS, deepTreeDepthOnHost, deepTreeScript } from "../helpers/deep-tree.js";
import { dirExists, processExists, sandboxInternals } from "../helpers/sandbox-internals.js";
import { deleteTemplate } from "../templates/delete-template.js";

const env = inject("burrow");
const opts = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl };
const suffix = Math.random().toString(36).slice(2, 8);
const templateName = `deep-${suffix}`;

afterAll(async () => {
  await deleteTemplate(env, templateName);
});

describe("a tree deeper than PATH_MAX", () => {
  it("is removed with its sandbox: kill answers as E2B does and nothing is left on disk", async () => {
    const sandbox = await Sandbox.create("base", opts);
    const inside = sandboxInternals(env.stateDir, sandbox.sandboxId);
    await sandbox.files.write("/tmp/deep.py", deepTreeScript("/home/user/deep"));
    const built = await sandbox.commands.run("python3 /tmp/deep.py && id -un", { user: "user" });
    expect(built.stdout.trim()).toBe("user");
    // The whole tree is there, and its host path is far beyond PATH_MAX: the removal below has something to fail on.
    const upperRoot = join(inside.dir, "upper/home/user/deep");
    expect(deepTreeDepthOnHost(upperRoot)).toBe(DEEP_LEVELS);
    expect(upperRoot.length + DEEP_LEVELS * 51).toBeGreaterThan(4096);

    expect(await sandbox.kill()).toBe(true);

    expect(processExists(inside.pid)).toBe(false);
    expect(dirExists(inside.dir)).toBe(false);
    expect(await Sandbox.kill(sandbox.sandboxId, opts)).toBe(false);
    await expect(Sandbox.getInfo(sandbox.sandboxId, opts)).rejects.toThrow();
  });

  it("built by a RUN step leaves no build sandbox or temporary layer behind", { timeout: 600_000 }, async () => {
    const template = Template()
      .fromTemplate("base")
      .runCmd(`cat > /tmp/deep.py <<'EOF'\n${deepTreeScript("/home/user/deep")}EOF`, { user: "user" })
      .runCmd("python3 /tmp/deep.py", { user: "user" });
    const outcome = await Template.build(template, templateName, { ...opts, onBuildLogs: () => undefined }).then(
      () => "built",
      (error: unknown) => error as Error,
    );
    if (outcome instanceof Error) {
      // Where the step's upper directory has to be copied out of the sandbox's subvolume, a path-based copy cannot
      // take it: the build fails with a clear message instead of leaving anything behind.
      expect(outcome.message).toMatch(/step 2: .*File name too long/);
      expect(outcome.message.length).toBeLessThan(2000);
    }
    await deleteTemplate(env, templateName);
    await waitFor(() => leftovers().length === 0, () => `left behind: ${leftovers().join(", ")}`);
  });
});

/** Build sandboxes and temporary layer directories that are still there. */
function leftovers(): string[] {
  const buildSandboxes = readdirSync(join(env.stateDir, "sandboxes")).filter((id) => {
    try {
      const record = JSON.parse(readFileSync(join(env.stateDir, "sandboxes", id, "sandbox.json"), "utf8")) as { templateId: string };
      return record.templateId.startsWith("build");
    } catch {
      // No record (yet, or any more): a sandbox being set up or taken down.
      return true;
    }
  });
  const tmpLayers = readdirSync(join(env.stateDir, "layers")).filter((name) => name.startsWith(".tmp-"));
  return [...buildSandboxes.map((id) => `sandbox ${id}`), ...tmpLayers.map((name) => `layer ${name}`)];
}

async function waitFor(condition: () => boolean, describe: () => string): Promise<void> {
  for (let i = 0; i < 300 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 100));
  if (!condition()) throw new Error(`gave up waiting: ${describe()}`);
}
