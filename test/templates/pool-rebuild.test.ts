// The warm pool follows its template: when `base` is rebuilt (or its default tag moves) while the pool is full,
// the pooled sandboxes of the old build are killed, never handed out, and the pool refills from the new build.
//
// This runs its own server process (the real CLI, pool of two `base` sandboxes) in a state directory of its own:
// rebuilding `base` on the shared test server would change the base of every other suite running against it
// (their layer cache keys and what their sandboxes contain).
import { existsSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { Sandbox, Template } from "e2b";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { burrowDown, freePort, startServerProcess, stopServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { newTestInstance } from "../helpers/test-instance.js";

const MARKER = "/etc/burrow-pool-marker";
const POOL_SIZE = 2;

interface Pooled {
  sandboxId: string;
  pid: number;
}

describe("warm pool across rebuilds of its template", () => {
  const instance = newTestInstance("pool-rebuild");
  let server: ServerProcess | undefined;
  let conn: { apiKey: string; apiUrl: string; sandboxUrl: string };

  beforeAll(async () => {
    server = await startServerProcess(instance, await freePort(), ["--pool-size", String(POOL_SIZE)]);
    conn = { apiKey: server.apiKey, apiUrl: server.url, sandboxUrl: server.url };
  });

  afterAll(async () => {
    if (server) await stopServerProcess(server, "SIGTERM");
    burrowDown(instance);
    rmSync(instance.stateDir, { recursive: true, force: true });
  });

  /** Sandboxes the pool holds now (from their records on disk). */
  function pooled(): Pooled[] {
    const dir = join(instance.stateDir, "sandboxes");
    const out: Pooled[] = [];
    for (const sandboxId of readdirSync(dir)) {
      try {
        const record = JSON.parse(readFileSync(join(dir, sandboxId, "sandbox.json"), "utf8")) as { pooled: boolean; pid: number; templateId: string };
        // Prepared sandboxes ("shells", template "*") are a pool of their own.
        if (record.pooled && record.templateId !== "*") out.push({ sandboxId, pid: record.pid });
      } catch {
        // Being created or removed.
      }
    }
    return out.sort((a, b) => a.sandboxId.localeCompare(b.sandboxId));
  }

  /** The marker file as a pooled sandbox sees it (through its init's root), or undefined when it has none. */
  function markerIn(sandbox: Pooled): string | undefined {
    try {
      return readFileSync(`/proc/${sandbox.pid}/root${MARKER}`, "utf8").trim();
    } catch {
      return undefined;
    }
  }

  async function waitFor<T>(what: string, check: () => T | undefined): Promise<T> {
    for (let i = 0; i < 1200; i++) {
      const value = check();
      if (value !== undefined) return value;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`gave up waiting for ${what}; pool: ${JSON.stringify(pooled())}`);
  }

  /** A full pool whose sandboxes all see `marker` (undefined: no marker file). */
  function fullPoolOf(marker: string | undefined): Pooled[] | undefined {
    const now = pooled();
    return now.length === POOL_SIZE && now.every((sandbox) => markerIn(sandbox) === marker) ? now : undefined;
  }

  async function markerOfNewSandbox(): Promise<{ sandboxId: string; marker: string }> {
    const sandbox = await Sandbox.create("base", conn);
    try {
      const result = await sandbox.commands.run(`cat ${MARKER} 2>/dev/null || echo none`);
      return { sandboxId: sandbox.sandboxId, marker: result.stdout.trim() };
    } finally {
      await sandbox.kill();
    }
  }

  function rebuiltBase(marker: string) {
    return Template().fromTemplate("base").runCmd(`echo ${marker} > ${MARKER}`, { user: "root" });
  }

  it("discards the pooled sandboxes of the old build when base is rebuilt, and creates see the new build", { timeout: 900_000 }, async () => {
    const before = await waitFor("a full pool of the original base", () => fullPoolOf(undefined));

    await Template.build(rebuiltBase("one"), "base", conn);

    // Straight after the build: no sandbox of the old build is handed out.
    const first = await markerOfNewSandbox();
    expect(first.marker).toBe("one");
    expect(before.map((s) => s.sandboxId)).not.toContain(first.sandboxId);

    // The old pooled sandboxes are gone (killed, their directories removed) and the pool is full of the new build.
    await waitFor("the old pooled sandboxes to go", () =>
      before.every((s) => !existsSync(join(instance.stateDir, "sandboxes", s.sandboxId))) ? true : undefined,
    );
    const refilled = await waitFor("a full pool of the rebuilt base", () => fullPoolOf("one"));

    // And the refilled pool serves creates.
    const second = await markerOfNewSandbox();
    expect(second.marker).toBe("one");
    expect(refilled.map((s) => s.sandboxId)).toContain(second.sandboxId);
  });

  it("keeps the pool when another tag of base is built, and follows base when its default tag moves", { timeout: 900_000 }, async () => {
    const full = await waitFor("a full pool of the rebuilt base", () => fullPoolOf("one"));

    // A build tagged `next` only: `base` (its default tag) still names build "one", so the pool stays as it is.
    await Template.build(rebuiltBase("two"), "base", { ...conn, tags: ["next"] });
    expect(pooled().map((s) => s.sandboxId)).toEqual(full.map((s) => s.sandboxId));
    expect((await markerOfNewSandbox()).marker).toBe("one");
    await waitFor("the pool to refill", () => fullPoolOf("one"));

    // Moving the default tag to `next` changes what `base` names.
    await Template.assignTags("base:next", ["default"], conn);
    expect((await markerOfNewSandbox()).marker).toBe("two");
    await waitFor("a full pool of base:next", () => fullPoolOf("two"));
  });
});
