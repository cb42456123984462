// Code as a trigger and task target: the server runs it in the sandbox's execution server (a real code-interpreter
// sandbox through the official SDK) and publishes what it produced on `sbx.<template>.<sandbox>.code.<type>`. The
// events are read as raw bus messages, so the subjects themselves are checked. Bad input gets a clear error.
import { Sandbox as BaseSandbox } from "e2b";
import type { Sandbox } from "@e2b/code-interpreter";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { BurrowApiError, BusClient, type BusMessage } from "@burrow/sdk";
import { createInterpreter } from "../code-interpreter/helpers.js";

const env = inject("burrow");
const opts = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl };
const client = new BusClient({ baseUrl: env.apiUrl, apiKey: env.apiKey });

interface CodeEventBody {
  category: string;
  type: string;
  runId: string;
  sandboxId: string;
  templateId: string;
  language?: string;
  text?: string;
  result?: Record<string, unknown>;
  omitted?: string[];
  name?: string;
  value?: string;
  ok?: boolean;
  error?: string;
  executionCount?: number;
}

interface Seen {
  subject: string;
  event: CodeEventBody;
}

/** Raw bus messages on a sandbox's code subjects, gathered from the moment of subscription. */
async function codeMessages(sandboxId: string) {
  const sub = await client.bus.subscribe(`sbx.*.${sandboxId}.code.>`);
  const seen: Seen[] = [];
  const pump = (async () => {
    for await (const m of sub as AsyncIterable<BusMessage>) seen.push({ subject: m.subject, event: JSON.parse(m.text ?? "{}") as CodeEventBody });
  })();
  return {
    seen,
    /** The events of runs that ended, by run, once `runs` runs have ended. */
    async ended(runs: number, timeoutMs = 120_000): Promise<Map<string, Seen[]>> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const byRun = new Map<string, Seen[]>();
        for (const s of seen) byRun.set(s.event.runId, [...(byRun.get(s.event.runId) ?? []), s]);
        const done = new Map([...byRun].filter(([, events]) => events.some((s) => s.event.type === "end")));
        if (done.size >= runs) return done;
        if (Date.now() > deadline) throw new Error(`${done.size} of ${runs} runs ended; events: ${JSON.stringify(seen.map((s) => s.subject))}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async close() {
      sub.close();
      await pump.catch(() => undefined);
    },
  };
}

let sandbox: Sandbox;
let templateId: string;

beforeAll(async () => {
  sandbox = await createInterpreter(env);
  templateId = (await sandbox.getInfo()).templateId;
}, 1_800_000);

afterAll(async () => {
  await sandbox?.kill();
});

describe("code as a trigger target", () => {
  it("runs a trigger's code in the source sandbox's kernel, with the event in env vars and state kept between runs", { timeout: 180_000 }, async () => {
    const messages = await codeMessages(sandbox.sandboxId);
    let triggerId: string | undefined;
    try {
      await sandbox.files.makeDir("/home/user/in");
      const watch = await client.watches.create(sandbox.sandboxId, "/home/user/in");
      const trigger = await client.triggers.create({
        on: { sandboxId: sandbox.sandboxId, category: "fs", type: "create", pathPrefix: "/home/user/in/" },
        in: "source",
        code: {
          language: "python",
          code: [
            "import os",
            "path = os.environ['BURROW_EVENT_PATH']",
            "runs = globals().get('runs', 0) + 1",
            "print('event', os.environ['BURROW_EVENT'], os.path.basename(path))",
            "{'runs': runs, 'total': sum(int(x) for x in open(path).read().split())}",
          ].join("\n"),
        },
        maxAttempts: 1,
      });
      triggerId = trigger.id;
      await sandbox.files.write("/home/user/in/a.txt", "1 2 3");
      await messages.ended(1);
      await sandbox.files.write("/home/user/in/b.txt", "10 20");
      const runs = [...(await messages.ended(2)).values()];
      await client.watches.delete(sandbox.sandboxId, watch.watchId);

      for (const [index, events] of runs.entries()) {
        const runId = events[0]!.event.runId;
        expect(runId).toMatch(new RegExp(`^trigger:${trigger.id}_`));
        // Each event on its subject, in the order the run produced them.
        expect(events.map((s) => s.subject)).toEqual(
          ["started", "stdout", "result", "end"].map((type) => `sbx.${templateId}.${sandbox.sandboxId}.code.${type}`),
        );
        for (const s of events) expect(s.event).toMatchObject({ category: "code", sandboxId: sandbox.sandboxId, templateId, runId });
        const [started, stdout, result, end] = events.map((s) => s.event);
        expect(started).toMatchObject({ type: "started", language: "python" });
        expect(stdout!.text).toBe(`event fs.create ${index === 0 ? "a.txt" : "b.txt"}\n`);
        // The second run sees the first one's variables: both ran in the python default context.
        expect(result!.result).toMatchObject({ text: index === 0 ? "{'runs': 1, 'total': 6}" : "{'runs': 2, 'total': 30}", is_main_result: true });
        expect(end).toMatchObject({ type: "end", ok: true });
      }

      // The task's status holds the run's outcome too.
      const task = await client.tasks.wait(runs[1]![0]!.event.runId, { timeoutMs: 60_000 });
      expect(task.state).toBe("succeeded");
      expect(task.result).toMatchObject({ exitCode: 0, stdout: "event fs.create b.txt\n", sandboxId: sandbox.sandboxId });
      expect(task.result?.execution?.results).toEqual([expect.objectContaining({ text: "{'runs': 2, 'total': 30}" })]);
    } finally {
      if (triggerId) await client.triggers.delete(triggerId);
      await messages.close();
    }
  });

  it("publishes an error the code raised and rich results, and records the task as dead after its attempts", { timeout: 180_000 }, async () => {
    const messages = await codeMessages(sandbox.sandboxId);
    try {
      const chart = await client.tasks.submit({
        target: { sandboxId: sandbox.sandboxId },
        code: { language: "python", code: "import matplotlib.pyplot as plt\nplt.bar(['a', 'b'], [1, 2])\nplt.title('bars')\nplt.show()" },
      });
      const failing = await client.tasks.submit({
        target: { sandboxId: sandbox.sandboxId },
        code: { language: "js", code: "console.error('about to fail'); null.x" },
        maxAttempts: 3,
      });
      const byRun = await messages.ended(2);

      const plotted = byRun.get(chart.id)!.map((s) => s.event);
      const result = plotted.find((e) => e.type === "result")!;
      expect(typeof result.result?.png).toBe("string");
      expect(result.result?.chart).toMatchObject({ type: "bar", title: "bars" });
      expect(plotted.at(-1)).toMatchObject({ type: "end", ok: true });

      // Its first attempt (a retry may have begun by now; attempts share the run id, each from started to end).
      const all = byRun.get(failing.id)!.map((s) => s.event);
      const failed = all.slice(0, all.findIndex((e) => e.type === "end") + 1);
      expect(failed.map((e) => e.type)).toEqual(["started", "stderr", "error", "end"]);
      expect(failed[0]).toMatchObject({ language: "javascript" });
      expect(failed[1]!.text).toBe("about to fail\n");
      expect(failed[2]).toMatchObject({ name: "TypeError", value: expect.stringContaining("null") });
      expect(failed[3]).toMatchObject({ ok: false });
      // A run whose code raised is a failed attempt, retried like a failing command; the error names the exception.
      const status = await client.tasks.wait(failing.id, { timeoutMs: 120_000 });
      expect(status).toMatchObject({ state: "dead", attempt: 3, error: expect.stringMatching(/^TypeError: /) });
      expect(status.result?.execution?.error).toMatchObject({ name: "TypeError" });
    } finally {
      await messages.close();
    }
  });

  it("runs code in a fresh code-interpreter sandbox from the template, in a context of its own when given a cwd", { timeout: 600_000 }, async () => {
    const { id } = await client.tasks.submit({
      target: { template: "code-interpreter-v1" },
      code: { language: "bash", code: "pwd; echo \"$GREETING\"" },
      process: { cwd: "/tmp", env: { GREETING: "hi from the task" } },
    });
    const status = await client.tasks.wait(id, { timeoutMs: 600_000 });
    expect(status).toMatchObject({ state: "succeeded", result: { exitCode: 0, stdout: "/tmp\nhi from the task\n" } });
    const freshId = status.result!.sandboxId!;
    expect(freshId).not.toBe(sandbox.sandboxId);
    expect((await BaseSandbox.list(opts).nextItems()).map((s) => s.sandboxId)).not.toContain(freshId);
  });
});

describe("bad code targets", () => {
  it("refuses code for a running sandbox without an execution server, at once", async () => {
    const base = await BaseSandbox.create("base", opts);
    try {
      const task = client.tasks.submit({ target: { sandboxId: base.sandboxId }, code: { language: "python", code: "1" } });
      await expect(task).rejects.toBeInstanceOf(BurrowApiError);
      await expect(task).rejects.toMatchObject({ status: 400, message: expect.stringContaining("no code execution server") });
      const trigger = client.triggers.create({ on: { sandboxId: base.sandboxId, category: "fs" }, in: "source", code: { language: "python", code: "1" } });
      await expect(trigger).rejects.toMatchObject({ status: 400, message: expect.stringContaining("code-interpreter-v1") });
    } finally {
      await base.kill();
    }
  });

  it("fails a run in a fresh sandbox without an execution server with that message, without retrying", { timeout: 180_000 }, async () => {
    const { id } = await client.tasks.submit({ target: { template: "base" }, code: { language: "python", code: "1" }, maxAttempts: 3 });
    const status = await client.tasks.wait(id, { timeoutMs: 120_000 });
    expect(status).toMatchObject({ state: "dead", attempt: 1, error: expect.stringContaining("no code execution server") });
  });

  it("refuses unknown languages and cmd-only settings when the rule is made, and a language the sandbox lacks when it runs", { timeout: 120_000 }, async () => {
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${env.apiUrl}/burrow/v1${path}`, { method: "POST", headers: { "X-API-Key": env.apiKey, "Content-Type": "application/json" }, body: JSON.stringify(body) });
      return { status: res.status, body: (await res.json()) as { code: number; message: string } };
    };
    const target = { sandboxId: sandbox.sandboxId };
    for (const [body, message] of [
      [{ target, code: { language: "cobol", code: "x" } }, /language "cobol" is not supported \(python, javascript, typescript, bash, r\)/],
      [{ target, code: { language: "python", code: "1" }, process: { user: "root" } }, /process.user applies to cmd only/],
      [{ target, code: { language: "python", code: "1" }, terminal: { pty: true } }, /terminal applies to cmd only/],
      [{ target, code: { language: "python", code: "1" }, outputEvents: true }, /outputEvents applies to cmd only/],
    ] as const) {
      const answer = await post("/tasks", body);
      expect(answer.status).toBe(400);
      expect(answer.body.code).toBe(400);
      expect(answer.body.message).toMatch(message);
    }
    // R is a language code runs know, but this template has no R kernel: the execution server says so, once.
    const { id } = await client.tasks.submit({ target, code: { language: "r", code: "1 + 1" }, maxAttempts: 3 });
    const status = await client.tasks.wait(id, { timeoutMs: 60_000 });
    expect(status).toMatchObject({ state: "dead", attempt: 1, error: expect.stringContaining("language 'r' is not available in this sandbox") });
  });
});
