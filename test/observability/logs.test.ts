// E2B's sandbox logs (GET /sandboxes/{id}/logs and /v2/sandboxes/{id}/logs) against the real server: the start
// command's and commands' output and envd's own lines, the v2 filters (level, search, cursor with direction, limit),
// a killed sandbox's logs, and E2B's error shape for unknown sandboxes and bad parameters.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Sandbox, Template, waitForFile } from "e2b";
import { burrowEnv, hasBurrowEnv, sdkOpts } from "../conformance/env.js";
import { deleteTemplate } from "../templates/delete-template.js";
import { BURROW_BIN, runBurrow } from "../cli/run-burrow.js";

const maybe = hasBurrowEnv ? describe : describe.skip;

interface Entry {
  timestamp: string;
  level: string;
  message: string;
  fields: Record<string, string>;
}

async function get(path: string): Promise<{ status: number; body: any }> {
  const env = burrowEnv();
  const res = await fetch(`${env.apiUrl}${path}`, { headers: { "x-api-key": env.apiKey } });
  return { status: res.status, body: await res.json() };
}

async function v2(sandboxId: string, query = ""): Promise<Entry[]> {
  const { status, body } = await get(`/v2/sandboxes/${sandboxId}/logs${query ? `?${query}` : ""}`);
  expect(status, JSON.stringify(body)).toBe(200);
  expect(Object.keys(body)).toEqual(["logs"]);
  return body.logs as Entry[];
}

const suffix = randomBytes(4).toString("hex");
const templateName = `logs-start-${suffix}`;

maybe("sandbox logs (E2B's REST shapes)", () => {
  let sandbox: Sandbox;

  beforeAll(async () => {
    const template = Template()
      .fromTemplate("base")
      .setStartCmd(`echo start-out-${suffix}; echo start-err-${suffix} >&2; touch /tmp/ready; sleep infinity`, waitForFile("/tmp/ready"));
    await Template.build(template, templateName, { ...sdkOpts(), onBuildLogs: () => undefined });
    sandbox = await Sandbox.create(templateName, { ...sdkOpts(), timeoutMs: 120_000 });
  }, 600_000);

  afterAll(async () => {
    await sandbox?.kill().catch(() => undefined);
    await deleteTemplate(burrowEnv(), templateName);
  });

  test("the start command's stdout (info) and stderr (error) are there, tagged, with envd's own lines", async () => {
    const logs = await v2(sandbox.sandboxId, "direction=forward");
    const out = logs.find((e) => e.message === `start-out-${suffix}`);
    const err = logs.find((e) => e.message === `start-err-${suffix}`);
    expect(out, JSON.stringify(logs.slice(0, 20))).toMatchObject({ level: "info", fields: { stream: "stdout", tag: "burrow-start-cmd" } });
    expect(err).toMatchObject({ level: "error", fields: { stream: "stderr", tag: "burrow-start-cmd" } });
    expect(Number(out!.fields.pid)).toBeGreaterThan(0);
    // envd's own log: the start command's process start, as envd wrote it.
    expect(logs.some((e) => e.message === "process started" && e.fields.tag === "burrow-start-cmd")).toBe(true);
    for (const e of logs) {
      expect(new Date(e.timestamp).toISOString()).toBe(e.timestamp);
      expect(["debug", "info", "warn", "error"]).toContain(e.level);
      for (const v of Object.values(e.fields)) expect(typeof v).toBe("string");
    }
  });

  test("commands' output, filtered by level and search; forward and backward from a cursor; limit", async () => {
    await sandbox.commands.run(`echo first-${suffix}; echo first-err-${suffix} >&2`);
    const between = Date.now();
    await new Promise((r) => setTimeout(r, 20));
    await sandbox.commands.run(`for i in 1 2 3; do echo second-$i-${suffix}; done`);

    const all = await v2(sandbox.sandboxId, "direction=forward");
    const messages = all.map((e) => e.message);
    for (const m of [`first-${suffix}`, `first-err-${suffix}`, `second-1-${suffix}`, `second-3-${suffix}`]) expect(messages).toContain(m);
    expect(messages.indexOf(`first-${suffix}`)).toBeLessThan(messages.indexOf(`second-1-${suffix}`));

    const errors = await v2(sandbox.sandboxId, "level=error&direction=forward");
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.every((e) => e.level === "error")).toBe(true);
    expect(errors.map((e) => e.message)).toEqual(expect.arrayContaining([`first-err-${suffix}`, `start-err-${suffix}`]));
    const warnUp = await v2(sandbox.sandboxId, "level=warn&direction=forward");
    expect(warnUp.every((e) => e.level === "warn" || e.level === "error")).toBe(true);
    expect(warnUp.map((e) => e.message)).toContain(`first-err-${suffix}`);

    const searched = await v2(sandbox.sandboxId, `search=${encodeURIComponent(`second-2-${suffix}`)}`);
    expect(searched.map((e) => e.message)).toEqual([`second-2-${suffix}`]);
    // Case-sensitive, as E2B's.
    expect(await v2(sandbox.sandboxId, `search=${encodeURIComponent(`SECOND-2-${suffix}`)}`)).toEqual([]);

    const after = await v2(sandbox.sandboxId, `cursor=${between}&direction=forward&search=${suffix}`);
    expect(after.map((e) => e.message)).toEqual([`second-1-${suffix}`, `second-2-${suffix}`, `second-3-${suffix}`]);
    const before = await v2(sandbox.sandboxId, `cursor=${between}&direction=backward&search=${suffix}`);
    // Newest first: the first command's two lines (their order across stdout and stderr is the pipes'), then older ones.
    expect(before.map((e) => e.message).slice(0, 2).sort()).toEqual([`first-${suffix}`, `first-err-${suffix}`].sort());
    expect(before.map((e) => e.message)).toContain(`start-out-${suffix}`);
    expect(before.map((e) => e.message)).not.toContain(`second-1-${suffix}`);
    // Backward is the default: newest first.
    const newest = await v2(sandbox.sandboxId, `search=${suffix}&limit=2`);
    expect(newest.map((e) => e.message)).toEqual([`second-3-${suffix}`, `second-2-${suffix}`]);
  });

  test("v1 answers logs and logEntries from `start`, oldest first", async () => {
    const { status, body } = await get(`/sandboxes/${sandbox.sandboxId}/logs?limit=5000`);
    expect(status).toBe(200);
    expect(Object.keys(body).sort()).toEqual(["logEntries", "logs"]);
    expect(body.logs.length).toBe(body.logEntries.length);
    const i = body.logs.findIndex((l: { line: string }) => l.line === `start-out-${suffix}`);
    expect(i).toBeGreaterThanOrEqual(0);
    expect(body.logEntries[i]).toMatchObject({ message: `start-out-${suffix}`, level: "info" });
    expect(body.logs[i].timestamp).toBe(body.logEntries[i].timestamp);
    const future = await get(`/sandboxes/${sandbox.sandboxId}/logs?start=${Date.now() + 60_000}`);
    expect(future.body).toEqual({ logs: [], logEntries: [] });
  });

  test("bad parameters answer 400 in E2B's shape", async () => {
    for (const q of ["level=loud", "direction=sideways", "limit=1001", "cursor=-1", `search=${"x".repeat(257)}`]) {
      const { status, body } = await get(`/v2/sandboxes/${sandbox.sandboxId}/logs?${q}`);
      expect(status, q).toBe(400);
      expect(body).toMatchObject({ code: 400 });
      expect(typeof body.message).toBe("string");
    }
  });
});

maybe("sandbox logs of ended and unknown sandboxes", () => {
  test("a killed sandbox's logs stay readable, including its last output", async () => {
    const sandbox = await Sandbox.create("base", { ...sdkOpts(), timeoutMs: 60_000 });
    await sandbox.commands.run(`echo last-words-${suffix}`);
    await sandbox.kill();
    expect(await Sandbox.connect(sandbox.sandboxId, sdkOpts()).catch((e: unknown) => e)).toBeInstanceOf(Error);
    const logs = await v2(sandbox.sandboxId, `search=last-words-${suffix}`);
    expect(logs.map((e) => e.message)).toEqual([`last-words-${suffix}`]);
    const v1 = await get(`/sandboxes/${sandbox.sandboxId}/logs`);
    expect(v1.status).toBe(200);
    expect(v1.body.logs.map((l: { line: string }) => l.line)).toContain(`last-words-${suffix}`);
  });

  test("an unknown sandbox is 404 in E2B's shape, v1 and v2", async () => {
    for (const path of ["/sandboxes/nope-sandbox/logs", "/v2/sandboxes/nope-sandbox/logs"]) {
      const { status, body } = await get(path);
      expect(status, path).toBe(404);
      expect(body).toMatchObject({ code: 404 });
    }
  });
});

maybe("burrow sandbox logs", () => {
  const env = () => ({ ...process.env, E2B_API_URL: burrowEnv().apiUrl, E2B_SANDBOX_URL: burrowEnv().sandboxUrl, E2B_API_KEY: burrowEnv().apiKey });

  test("prints a sandbox's lines, filtered; -f follows new ones and stops when the sandbox ends", async () => {
    const sandbox = await Sandbox.create("base", { ...sdkOpts(), timeoutMs: 60_000 });
    try {
      await sandbox.commands.run(`echo cli-one-${suffix}; echo cli-err-${suffix} >&2`);
      const all = await runBurrow(["sandbox", "logs", sandbox.sandboxId], { env: env() });
      expect(all.code, all.stderr).toBe(0);
      expect(all.stdout).toMatch(new RegExp(`INFO +cli-one-${suffix}`));
      expect(all.stdout).toMatch(new RegExp(`ERROR +cli-err-${suffix}`));
      const errors = await runBurrow(["sandbox", "logs", "--level", "error", "--json", sandbox.sandboxId], { env: env() });
      const parsed = errors.stdout.trim().split("\n").map((l) => JSON.parse(l) as Entry);
      expect(parsed.every((e) => e.level === "error")).toBe(true);
      expect(parsed.map((e) => e.message)).toContain(`cli-err-${suffix}`);

      const follower = spawn(process.execPath, [BURROW_BIN, "sandbox", "logs", "-f", "--search", `cli-later-${suffix}`, sandbox.sandboxId], { env: env() });
      let out = "";
      follower.stdout.on("data", (c: Buffer) => (out += c.toString()));
      const exited = new Promise<number | null>((resolve) => follower.on("close", resolve));
      try {
        await sandbox.commands.run(`echo cli-later-${suffix}-1`);
        for (let i = 0; i < 100 && !out.includes(`cli-later-${suffix}-1`); i++) await new Promise((r) => setTimeout(r, 100));
        expect(out).toContain(`cli-later-${suffix}-1`);
        await sandbox.commands.run(`echo cli-later-${suffix}-2`);
        await sandbox.kill();
        expect(await exited).toBe(0);
        expect(out.trim().split("\n").map((l) => /cli-later-\S+/.exec(l)?.[0])).toEqual([`cli-later-${suffix}-1`, `cli-later-${suffix}-2`]);
      } finally {
        if (follower.exitCode === null) follower.kill("SIGKILL");
      }
    } finally {
      await sandbox.kill().catch(() => undefined);
    }
  });

  test("an unknown sandbox exits 1", async () => {
    const res = await runBurrow(["sandbox", "logs", "nope-sandbox"], { env: env() });
    expect(res.code).toBe(1);
    expect(res.stderr).toContain("not found");
  });
});
