// Filesystem and process events, the server's sandbox runner, triggers and tasks, end to end: the example pipeline
// (examples/pipeline) across four real sandboxes, the watch bridge, fresh sandboxes from templates, persistence
// of rules across a server restart, and the errors bad input gets.
import { rmSync } from "node:fs";
import { afterAll, describe, expect, inject, it } from "vitest";
import { Sandbox } from "e2b";
import { BurrowApiError, BusClient } from "@burrow/sdk";
import type { SandboxEvent } from "@burrow/sdk";
import { Code } from "@burrow/protocol";
// A plain ES module (the runnable example), without type declarations.
import { runPipeline } from "../../examples/pipeline/pipeline.mjs";
import { burrowDown, freePort, startServerProcess, stopServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { newTestInstance } from "../helpers/test-instance.js";

const env = inject("burrow");
const opts = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl };
const client = new BusClient({ baseUrl: env.apiUrl, apiKey: env.apiKey });

/** Events are gathered in the background from the moment of subscription; `until` waits for a condition on them. */
async function collectEvents(filter: Parameters<typeof client.events.subscribe>[0]) {
  const sub = await client.events.subscribe(filter);
  const seen: SandboxEvent[] = [];
  const waiters = new Set<() => void>();
  const pump = (async () => {
    for await (const e of sub) {
      seen.push(e);
      for (const w of waiters) w();
    }
  })();
  return {
    seen,
    async until(pred: (all: SandboxEvent[]) => boolean, timeoutMs = 30_000): Promise<SandboxEvent[]> {
      const deadline = Date.now() + timeoutMs;
      while (!pred(seen)) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`condition not met; events: ${JSON.stringify(seen.map((e) => `${e.category}.${e.type} ${e.path ?? e.pid ?? ""}`))}`);
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, left);
          const w = () => {
            clearTimeout(t);
            waiters.delete(w);
            resolve();
          };
          waiters.add(w);
        });
      }
      return seen;
    },
    async close() {
      sub.close();
      await pump.catch(() => undefined);
    },
  };
}

async function liveIds(): Promise<string[]> {
  return (await Sandbox.list(opts).nextItems()).map((s) => s.sandboxId);
}

function mean(xs: number[]): number {
  return Math.round((xs.reduce((a, b) => a + b, 0) / xs.length) * 100) / 100;
}

describe("event-driven pipeline across sandboxes", () => {
  it("runs collect → clean → analyze → visualize, each stage started by the previous stage's file event", async () => {
    const before = await liveIds();
    const r = (await runPipeline({ ...opts, log: () => undefined })) as unknown as {
      raw: string; clean: string; stats: Record<string, { count: number; mean: number; min: number; max: number }>; chart: string;
      sandboxIds: Record<string, string>; fired: Record<string, number>;
    };

    // collect: 30 days x 5 cities, some readings broken.
    const rawRows = r.raw.trim().split(/\r?\n/).slice(1);
    expect(rawRows).toHaveLength(150);
    // clean: only plausible numbers remain, and every good raw row is kept.
    const cleanRows = r.clean.trim().split(/\r?\n/).slice(1).map((l) => l.split(","));
    const good = rawRows.map((l) => l.split(",")).filter(([, , c]) => c !== "" && !Number.isNaN(Number(c)) && Math.abs(Number(c)) <= 60);
    expect(cleanRows.length).toBe(good.length);
    expect(cleanRows.length).toBeLessThan(150);
    // analyze: the statistics agree with the clean data, recomputed here.
    const byCity = new Map<string, number[]>();
    for (const [, city, c] of cleanRows) byCity.set(city!, [...(byCity.get(city!) ?? []), Number(c)]);
    expect(Object.keys(r.stats).sort()).toEqual([...byCity.keys()].sort());
    for (const [city, xs] of byCity) {
      expect(r.stats[city]).toEqual({ count: xs.length, mean: mean(xs), min: Math.min(...xs), max: Math.max(...xs) });
    }
    // visualize: an SVG with one bar per city carrying its mean.
    expect(r.chart.startsWith("<svg")).toBe(true);
    expect(r.chart.trim().endsWith("</svg>")).toBe(true);
    const bars = [...r.chart.matchAll(/<rect class="bar" data-city="([^"]+)" data-mean="([^"]+)"/g)].map((m) => [m[1], Number(m[2])]);
    expect(bars).toEqual(Object.entries(r.stats).sort(([a], [b]) => a.localeCompare(b)).map(([c, s]) => [c, s.mean]));
    // Each stage was started exactly once, by its trigger.
    expect(Object.values(r.fired)).toEqual([1, 1, 1]);
    // Everything the pipeline created is gone.
    const after = await liveIds();
    for (const id of Object.values(r.sandboxIds)) expect(after).not.toContain(id);
    expect(after.filter((id) => !before.includes(id))).toEqual([]);
    expect((await client.triggers.list()).filter((t) => t.id.includes(`pipeline-`))).toEqual([]);
  }, 300_000);
});

describe("filesystem events from envd's watcher", () => {
  it("publishes create, write, rename, chmod and remove for a watched directory, and stops with the watch", async () => {
    const sandbox = await Sandbox.create("base", opts);
    const events = await collectEvents({ sandboxId: sandbox.sandboxId, category: "fs" });
    try {
      await sandbox.files.makeDir("/home/user/w");
      const w = await client.watches.create(sandbox.sandboxId, "/home/user/w", { recursive: true });
      expect(w).toMatchObject({ sandboxId: sandbox.sandboxId, path: "/home/user/w", recursive: true });
      expect((await client.watches.list(sandbox.sandboxId)).map((x) => x.watchId)).toEqual([w.watchId]);

      await sandbox.files.write("/home/user/w/a.txt", "hello");
      await sandbox.commands.run("cd /home/user/w && echo more >> a.txt && mv a.txt b.txt && chmod 600 b.txt && rm b.txt");
      const has = (type: string, path: string) => (all: SandboxEvent[]) => all.some((e) => e.type === type && e.path === path);
      await events.until((all) =>
        has("create", "/home/user/w/a.txt")(all) && has("write", "/home/user/w/a.txt")(all) && has("rename", "/home/user/w/a.txt")(all)
        && has("create", "/home/user/w/b.txt")(all) && has("chmod", "/home/user/w/b.txt")(all) && has("remove", "/home/user/w/b.txt")(all));
      for (const e of events.seen) expect(e).toMatchObject({ category: "fs", sandboxId: sandbox.sandboxId, templateId: expect.any(String) });

      await client.watches.delete(sandbox.sandboxId, w.watchId);
      expect(await client.watches.list(sandbox.sandboxId)).toEqual([]);
      await expect(client.watches.delete(sandbox.sandboxId, w.watchId)).rejects.toMatchObject({ status: 404 });
    } finally {
      await events.close();
      await sandbox.kill();
    }
  });

  it("watches a directory named in the burrow.watch metadata from creation, until the sandbox ends", async () => {
    const sandbox = await Sandbox.create("base", { ...opts, metadata: { "burrow.watch": "/tmp" } });
    const events = await collectEvents({ sandboxId: sandbox.sandboxId, category: "fs", pathPrefix: "/tmp/meta" });
    try {
      // The metadata watch starts just after creation; wait until the server reports it.
      for (let i = 0; i < 100 && (await client.watches.list(sandbox.sandboxId)).length === 0; i++) await new Promise((r) => setTimeout(r, 100));
      expect((await client.watches.list(sandbox.sandboxId)).map((w) => w.path)).toEqual(["/tmp"]);
      await sandbox.files.write("/tmp/meta.txt", "x");
      await events.until((all) => all.some((e) => e.type === "create" && e.path === "/tmp/meta.txt"));
    } finally {
      await events.close();
      await sandbox.kill();
    }
    // The watch went with the sandbox.
    await expect(client.watches.list(sandbox.sandboxId)).rejects.toMatchObject({ status: 404 });
  });
});

describe("tasks run by the server's sandbox runner", () => {
  it("runs in a fresh sandbox from a template with env, cwd and user, publishes proc events, and kills the sandbox", async () => {
    const proc = await collectEvents({ category: "proc" });
    try {
      const { id } = await client.tasks.submit({
        target: { template: "base" },
        cmd: 'echo "$GREETING"; pwd; whoami',
        process: { env: { GREETING: "hello from a task" }, cwd: "/tmp", user: "root", timeoutMs: 30_000 },
        category: "test.fresh",
        maxAttempts: 1,
      });
      const s = await client.tasks.wait(id, { timeoutMs: 120_000 });
      expect(s.state).toBe("succeeded");
      expect(s.result).toMatchObject({ exitCode: 0, stdout: "hello from a task\n/tmp\nroot\n" });
      const sandboxId = s.result!.sandboxId!;
      expect(sandboxId).toMatch(/^[a-z0-9]+$/);
      const mine = await proc.until((all) => all.some((e) => e.sandboxId === sandboxId && e.type === "exited"));
      const started = mine.find((e) => e.sandboxId === sandboxId && e.type === "started");
      const exited = mine.find((e) => e.sandboxId === sandboxId && e.type === "exited");
      expect(started).toMatchObject({ cmd: 'echo "$GREETING"; pwd; whoami', pid: expect.any(Number) });
      expect(exited).toMatchObject({ exitCode: 0, pid: started!.pid });
      // The fresh sandbox was killed once the command finished.
      expect(await liveIds()).not.toContain(sandboxId);
      await expect(Sandbox.connect(sandboxId, opts)).rejects.toThrow();
    } finally {
      await proc.close();
    }
  });

  it("runs under a pty with output events, and records a failing command as dead after its attempts", async () => {
    const sandbox = await Sandbox.create("base", opts);
    const proc = await collectEvents({ sandboxId: sandbox.sandboxId, category: "proc" });
    try {
      const tty = await client.tasks.submit({ target: { sandboxId: sandbox.sandboxId }, cmd: "tty; echo cols=$(tput cols)", terminal: { pty: true, cols: 120, rows: 40 }, outputEvents: true, maxAttempts: 1 });
      const s = await client.tasks.wait(tty.id, { timeoutMs: 60_000 });
      expect(s.state).toBe("succeeded");
      expect(s.result!.stdout).toMatch(/\/dev\/pts\/\d+/);
      expect(s.result!.stdout).toContain("cols=120");
      const all = await proc.until((e) => e.some((x) => x.type === "output"));
      const output = all.filter((e) => e.type === "output").map((e) => Buffer.from(e.dataBase64!, "base64").toString()).join("");
      expect(output).toContain("/dev/pts/");

      const failing = await client.tasks.submit({ target: { sandboxId: sandbox.sandboxId }, cmd: "echo oops >&2; exit 7", maxAttempts: 1 });
      const f = await client.tasks.wait(failing.id, { timeoutMs: 60_000 });
      expect(f).toMatchObject({ state: "dead", error: "exit code 7", result: { exitCode: 7, stderr: "oops\n" } });
      await proc.until((e) => e.some((x) => x.type === "exited" && x.exitCode === 7));
      // Submitting the same id again runs nothing.
      expect(await client.tasks.submit({ id: failing.id, target: { sandboxId: sandbox.sandboxId }, cmd: "true" })).toEqual({ id: failing.id, duplicate: true });
    } finally {
      await proc.close();
      await sandbox.kill();
    }
  });

  it("runs a trigger's command in the source sandbox with the event's path", async () => {
    const sandbox = await Sandbox.create("base", opts);
    let triggerId: string | undefined;
    try {
      await sandbox.files.makeDir("/home/user/inbox");
      await client.watches.create(sandbox.sandboxId, "/home/user/inbox");
      const t = await client.triggers.create({
        on: { sandboxId: sandbox.sandboxId, category: "fs", type: "create", pathPrefix: "/home/user/inbox/" },
        in: "source",
        cmd: "wc -c < {{path}} > /home/user/seen-$(basename {{path}})",
      });
      triggerId = t.id;
      expect((await client.triggers.get(t.id)).on).toEqual(t.on);
      const outbox = await collectEvents({ sandboxId: sandbox.sandboxId, category: "proc", type: "exited" });
      try {
        await sandbox.files.write("/home/user/inbox/note.txt", "12345");
        await outbox.until((all) => all.some((e) => e.exitCode === 0));
      } finally {
        await outbox.close();
      }
      expect((await sandbox.files.read("/home/user/seen-note.txt")).trim()).toBe("5");
    } finally {
      if (triggerId) await client.triggers.delete(triggerId);
      await sandbox.kill();
    }
    await expect(client.triggers.get(triggerId!)).rejects.toMatchObject({ status: 404 });
  });
});

describe("bad input", () => {
  const post = (path: string, body: unknown) =>
    fetch(`${env.apiUrl}/burrow/v1${path}`, { method: "POST", headers: { "content-type": "application/json", "x-api-key": env.apiKey }, body: JSON.stringify(body) });

  it("answers 404 in E2B's shape for unknown sandboxes, triggers and tasks", async () => {
    const w = await post("/sandboxes/nosuchsandbox/watches", { path: "/tmp" });
    expect(w.status).toBe(404);
    expect(await w.json()).toEqual({ code: 404, message: expect.stringContaining("nosuchsandbox") });
    const t = await post("/triggers", { on: { category: "fs" }, in: { sandboxId: "nosuchsandbox" }, cmd: "true" });
    expect(t.status).toBe(404);
    expect(await t.json()).toMatchObject({ code: 404 });
    const k = await post("/tasks", { target: { sandboxId: "nosuchsandbox" }, cmd: "true" });
    expect(k.status).toBe(404);
    await expect(client.tasks.get("no-such-task")).rejects.toMatchObject({ status: 404, code: Code.NotFound });
    await expect(client.triggers.delete("no-such-trigger")).rejects.toBeInstanceOf(BurrowApiError);
  });

  it("answers 400 for invalid rules and tasks, naming the problem", async () => {
    const cases: Array<[string, unknown, RegExp]> = [
      ["/triggers", { on: { category: "fs" }, in: "source" }, /exactly one of cmd and code/],
      ["/triggers", { on: { category: "fs" }, in: "source", cmd: "a", code: { language: "python", code: "1" } }, /exactly one of cmd and code/],
      ["/triggers", { on: {}, in: "source", cmd: "true" }, /at least one/],
      ["/triggers", { on: { category: "disk" }, in: "source", cmd: "true" }, /on\.category/],
      ["/triggers", { on: { category: "fs", type: "exploded" }, in: "source", cmd: "true" }, /on\.type/],
      ["/triggers", { on: { category: "fs" }, in: "elsewhere", cmd: "true" }, /in must be an object/],
      ["/triggers", { on: { category: "fs" }, in: "source", cmd: "true", priority: "9" }, /priority/],
      ["/triggers", { on: { category: "fs" }, in: "source", cmd: "true", colour: "red" }, /colour is not a known field/],
      ["/triggers", { id: "bad id!", on: { category: "fs" }, in: "source", cmd: "true" }, /id must match/],
      ["/triggers", { on: { category: "fs" }, in: "source", code: { language: "cobol", code: "x" } }, /not supported/],
      ["/triggers", { on: { category: "fs" }, in: "source", cmd: "true", inputs: [{ path: "/x" }] }, /sandboxId is required/],
      ["/tasks", { cmd: "true" }, /target is required/],
      ["/tasks", { target: { template: "base", sandboxId: "x" }, cmd: "true" }, /exactly one of sandboxId and template/],
      ["/tasks", { target: { template: "base" }, cmd: "true", process: { timeoutMs: -1 } }, /timeoutMs/],
      ["/sandboxes/whatever/watches", { path: "relative/dir" }, /absolute/],
    ];
    for (const [path, body, message] of cases) {
      const res = await post(path, body);
      const b = (await res.json()) as { code: number; message: string };
      expect({ path, body, status: res.status, code: b.code }).toEqual({ path, body, status: 400, code: 400 });
      expect(b.message).toMatch(message);
    }
  });
});

describe("triggers across a server restart", () => {
  const instance = newTestInstance("triggers");
  let server: ServerProcess | undefined;

  afterAll(async () => {
    if (server) await stopServerProcess(server, "SIGTERM");
    burrowDown(instance);
    rmSync(instance.stateDir, { recursive: true, force: true });
  });

  it("keeps its rules and fires them from the restarted engine", async () => {
    const port = await freePort();
    server = await startServerProcess(instance, port, ["--pool-size", "0"]);
    let c = new BusClient({ baseUrl: server.url, apiKey: server.apiKey });
    const created = await c.triggers.create({
      id: "survivor",
      on: { sandboxId: "probe", category: "fs", type: "create" },
      in: { template: "base" },
      cmd: "echo fired by {{path}}",
      maxAttempts: 1,
    });
    await stopServerProcess(server, "SIGTERM");

    server = await startServerProcess(instance, port, ["--pool-size", "0"]);
    c = new BusClient({ baseUrl: server.url, apiKey: server.apiKey });
    const { fired: _f, ...again } = await c.triggers.get("survivor");
    expect(again).toEqual(created);
    expect((await c.triggers.list()).map((t) => t.id)).toEqual(["survivor"]);

    const statuses = await c.bus.subscribe("task.>");
    try {
      const event = { category: "fs", type: "create", sandboxId: "probe", templateId: "base", path: "/probe.txt", atMs: Date.now() };
      await c.bus.publish("sbx.base.probe.fs.create", JSON.stringify(event), { durable: true });
      const it = statuses[Symbol.asyncIterator]();
      for (;;) {
        const next = await it.next();
        if (next.done) throw new Error("status stream ended");
        const s = JSON.parse(next.value.text ?? "{}") as { state: string; result?: { stdout: string; sandboxId?: string }; error?: string };
        if (s.state === "dead") throw new Error(`task failed: ${s.error}`);
        if (s.state !== "succeeded") continue;
        expect(s.result!.stdout).toBe("fired by /probe.txt\n");
        // The rule ran in a fresh sandbox, which is gone again.
        expect((await Sandbox.list({ apiKey: server.apiKey, apiUrl: server.url, sandboxUrl: server.url } as Parameters<typeof Sandbox.list>[0]).nextItems()).map((x) => x.sandboxId)).not.toContain(s.result!.sandboxId);
        break;
      }
    } finally {
      statuses.close();
    }
    await c.triggers.delete("survivor");
  }, 600_000);
});
