// Builds running at the same time do not disturb each other: different templates, templates sharing a cached
// prefix (both produce the same layer at once), and two builds of one template under different tags.
import { Sandbox, Template } from "e2b";
import { afterAll, describe, expect, inject, it } from "vitest";
import { deleteTemplate } from "./delete-template.js";

const env = inject("burrow");
const conn = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl };
const suffix = Math.random().toString(36).slice(2, 8);
const names = { a: `conc-a-${suffix}`, b: `conc-b-${suffix}`, c: `conc-c-${suffix}` };

afterAll(async () => {
  for (const name of Object.values(names)) await deleteTemplate(env, name);
});

/** Shared first step (same cache key in every build), then a step of its own that takes a moment. */
function template(label: string) {
  return Template()
    .fromTemplate("base")
    .runCmd(`echo shared-${suffix} > /home/user/shared`)
    .runCmd(`sleep 1; echo ${label} > /home/user/label; ls /home/user > /tmp/listing && mv /tmp/listing /home/user/`);
}

async function contents(ref: string): Promise<{ label: string; shared: string; listing: string }> {
  const sandbox = await Sandbox.create(ref, conn);
  try {
    const read = async (file: string) => (await sandbox.files.read(`/home/user/${file}`)).trim();
    return { label: await read("label"), shared: await read("shared"), listing: await read("listing") };
  } finally {
    await sandbox.kill();
  }
}

describe("concurrent builds", () => {
  it("four builds at once each get exactly their own result", { timeout: 900_000 }, async () => {
    const logs = new Map<string, string[]>();
    const build = (t: ReturnType<typeof template>, name: string, key: string) => {
      const lines: string[] = [];
      logs.set(key, lines);
      return Template.build(t, name, { ...conn, onBuildLogs: (e) => lines.push(e.message) });
    };
    const results = await Promise.all([
      build(template("a-x"), `${names.a}:x`, "a-x"),
      build(template("a-y"), `${names.a}:y`, "a-y"),
      build(template("b"), names.b, "b"),
      build(template("c"), names.c, "c"),
    ]);
    // Both builds of one name share its template id; every build has its own id.
    expect(results[0].templateId).toBe(results[1].templateId);
    expect(new Set(results.map((r) => r.buildId)).size).toBe(4);
    expect(new Set(results.map((r) => r.templateId)).size).toBe(3);
    // No build saw another's output in its log.
    for (const [key, lines] of logs) {
      expect(lines.some((l) => /ready \(/.test(l)), `${key} finished`).toBe(true);
      for (const other of logs.keys()) {
        if (other !== key) expect(lines.some((l) => l.includes(`echo ${other} >`)), `${key}'s log mentions ${other}`).toBe(false);
      }
    }

    for (const [ref, label] of [[`${names.a}:x`, "a-x"], [`${names.a}:y`, "a-y"], [names.b, "b"], [names.c, "c"]] as const) {
      const got = await contents(ref);
      expect(got.label, ref).toBe(label);
      expect(got.shared, ref).toBe(`shared-${suffix}`);
      // Nothing another build wrote leaked into this one's layers.
      expect(got.listing.split("\n").sort(), ref).toEqual(["label", "shared"]);
    }
    const tags = await Template.getTags(results[0].templateId, conn);
    expect(Object.fromEntries(tags.filter((t) => t.tag === "x" || t.tag === "y").map((t) => [t.tag, t.buildId]))).toEqual({
      x: results[0].buildId,
      y: results[1].buildId,
    });
  });
});
