// Pause and resume with memory kept (E2B `pause`/`betaPause`, resume through `Sandbox.connect`/`sbx.connect()`),
// driven by the official SDK against the real server: the cgroup freezer stops every process where it is and
// connect thaws it. Also the REST details the SDK hides (201 vs 200 on connect, legacy routes) and the bus events.
import { describe, expect, inject } from "vitest";
import { Sandbox, SandboxNotFoundError } from "e2b";
import { BusClient, type BusMessage } from "@burrow/sdk";
import {
  dirExists,
  cgroupFrozen,
  leftoverCgroups,
  linkExists,
  processExists,
  sandboxInternals,
} from "../helpers/sandbox-internals.js";
import { burrowEnv, sandboxTest, sdkOpts } from "./env.js";

const COUNTER = "/home/user/count";
/** Counts in a shell variable (memory) and writes each value out: a restarted process would start again at 1. */
const COUNT_LOOP = `sh -c 'i=0; while true; do i=$((i+1)); echo $i > ${COUNTER}; sleep 0.1; done'`;

function frozen(sandboxId: string): boolean {
  return cgroupFrozen(burrowEnv().instance, sandboxId);
}

async function readCount(sbx: Sandbox): Promise<number> {
  const text = await sbx.files.read(COUNTER).catch(() => "");
  return Number(text.trim() || "0");
}

/** Poll until the counter passes `above`; the test's own timeout bounds the wait. */
async function countPast(sbx: Sandbox, above: number): Promise<number> {
  for (;;) {
    const n = await readCount(sbx);
    if (n > above) return n;
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function api(path: string, init: { method: string; body?: unknown }): Promise<Response> {
  const env = burrowEnv();
  return fetch(`${env.apiUrl}${path}`, {
    method: init.method,
    headers: { "X-API-KEY": env.apiKey, "content-type": "application/json" },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
}

async function listedIds(state: ("running" | "paused")[], marker: string): Promise<string[]> {
  const items = await Sandbox.list({ ...sdkOpts(), query: { state, metadata: { marker } } }).nextItems();
  return items.map((s) => s.sandboxId);
}

/** Read on until a message matches; the iterator is advanced by hand so the subscription stays open. */
async function nextMatching(iterator: AsyncIterator<BusMessage>, pred: (m: BusMessage) => boolean): Promise<BusMessage> {
  for (;;) {
    const next = await iterator.next();
    if (next.done) throw new Error("subscription ended before a matching message");
    if (pred(next.value)) return next.value;
  }
}

describe("pause and resume", () => {
  sandboxTest("processes, env vars and files survive pause → connect", async ({ spawn }) => {
    const marker = `pause${Date.now()}`;
    const sbx = await spawn({ envs: { PAUSE_MARK: "kept" }, metadata: { marker } });
    await sbx.files.write("/home/user/note.txt", "written before pause");
    const counter = await sbx.commands.run(COUNT_LOOP, { background: true });
    const beforePause = await countPast(sbx, 3);

    expect(frozen(sbx.sandboxId)).toBe(false);
    expect(await sbx.pause()).toBe(true);
    expect(frozen(sbx.sandboxId)).toBe(true);
    expect(await sbx.isRunning()).toBe(false);
    expect((await sbx.getInfo()).state).toBe("paused");
    // Already paused: the server answers 409 and the SDK returns false.
    expect(await sbx.pause()).toBe(false);
    expect(await Sandbox.betaPause(sbx.sandboxId, sdkOpts())).toBe(false);
    expect(await listedIds(["paused"], marker)).toEqual([sbx.sandboxId]);
    expect(await listedIds(["running"], marker)).toEqual([]);
    expect(await listedIds(["running", "paused"], marker)).toEqual([sbx.sandboxId]);

    const resumed = await Sandbox.connect(sbx.sandboxId, sdkOpts());
    expect(frozen(sbx.sandboxId)).toBe(false);
    expect(await resumed.isRunning()).toBe(true);
    expect((await resumed.getInfo()).state).toBe("running");
    expect(await listedIds(["running"], marker)).toEqual([sbx.sandboxId]);
    expect(await listedIds(["paused"], marker)).toEqual([]);

    // The very same process goes on counting from its in-memory value.
    const afterResume = await countPast(resumed, beforePause);
    expect(afterResume).toBeGreaterThan(beforePause);
    expect((await resumed.commands.list()).map((p) => p.pid)).toContain(counter.pid);
    expect((await resumed.commands.run("echo $PAUSE_MARK")).stdout.trim()).toBe("kept");
    expect(await resumed.files.read("/home/user/note.txt")).toBe("written before pause");
  }, 120_000);

  sandboxTest("instance connect() resumes; in-flight streams are dropped on pause", async ({ spawn }) => {
    const sbx = await spawn();
    const sleeper = await sbx.commands.run("sleep 600", { background: true });
    expect(await sbx.betaPause()).toBe(true);
    // The gateway dropped the stream: waiting on it ends instead of hanging.
    await expect(sleeper.wait()).rejects.toThrow();
    await sbx.connect();
    expect(await sbx.isRunning()).toBe(true);
    // The process itself was only frozen, not killed by the dropped stream.
    expect((await sbx.commands.list()).map((p) => p.pid)).toContain(sleeper.pid);
    expect((await sbx.commands.run("echo alive")).stdout.trim()).toBe("alive");
  }, 120_000);

  sandboxTest("a paused sandbox does not time out; resuming re-arms the timeout", async ({ spawn }) => {
    const sbx = await spawn({ timeoutMs: 3_000 });
    expect(await sbx.pause()).toBe(true);
    // Well past the 3 s lifetime it had when it was paused.
    await new Promise((r) => setTimeout(r, 5_000));
    expect((await sbx.getInfo()).state).toBe("paused");
    const resumed = await Sandbox.connect(sbx.sandboxId, { ...sdkOpts(), timeoutMs: 60_000 });
    const info = await resumed.getInfo();
    expect(info.state).toBe("running");
    expect(info.endAt.getTime()).toBeGreaterThan(Date.now() + 30_000);
    expect(await resumed.isRunning()).toBe(true);
  }, 60_000);

  sandboxTest("connect answers 201 when it resumes and 200 when running; legacy routes too", async ({ spawn }) => {
    const sbx = await spawn();
    const id = sbx.sandboxId;
    for (const path of [`/v2/sandboxes/${id}/connect`, `/sandboxes/${id}/connect`, `/sandboxes/${id}/resume`]) {
      const pause = await api(`/sandboxes/${id}/pause`, { method: "POST", body: {} });
      expect(pause.status).toBe(204);
      const again = await api(`/sandboxes/${id}/pause`, { method: "POST", body: {} });
      expect(again.status).toBe(409);
      expect(await again.json()).toMatchObject({ code: 409 });
      const res = await api(path, { method: "POST", body: { timeout: 120 } });
      expect(res.status).toBe(201);
      expect(await res.json()).toMatchObject({ sandboxID: id, envdAccessToken: expect.any(String) });
    }
    expect((await api(`/v2/sandboxes/${id}/connect`, { method: "POST", body: {} })).status).toBe(200);
    expect((await api(`/sandboxes/${id}/resume`, { method: "POST", body: {} })).status).toBe(409);
    expect(await sbx.isRunning()).toBe(true);
  }, 120_000);

  sandboxTest("paused and resumed reach the bus", async ({ spawn }) => {
    const env = burrowEnv();
    const client = new BusClient({ baseUrl: env.apiUrl, apiKey: env.apiKey });
    const sub = await client.bus.subscribe("sbx.*.*.lifecycle.>");
    const iterator = sub[Symbol.asyncIterator]();
    try {
      const sbx = await spawn();
      const ofSandbox = (type: string) => (m: BusMessage) => m.subject.includes(sbx.sandboxId) && m.subject.endsWith(`.${type}`);
      expect(await sbx.pause()).toBe(true);
      await nextMatching(iterator, ofSandbox("paused"));
      await sbx.connect();
      await nextMatching(iterator, ofSandbox("resumed"));
    } finally {
      sub.close();
    }
  }, 60_000);

  sandboxTest("killing a paused sandbox cleans up", async ({ spawn }) => {
    const env = inject("burrow");
    const sbx = await spawn();
    await sbx.commands.run("sleep 600", { background: true });
    const inside = sandboxInternals(env.stateDir, sbx.sandboxId);
    expect(await sbx.pause()).toBe(true);
    expect(processExists(inside.pid)).toBe(true);

    expect(await sbx.kill()).toBe(true);
    expect(processExists(inside.pid)).toBe(false);
    expect(linkExists(inside.hostVeth)).toBe(false);
    expect(leftoverCgroups(env.instance, sbx.sandboxId)).toEqual([]);
    expect(dirExists(inside.dir)).toBe(false);
    expect(await Sandbox.kill(sbx.sandboxId, sdkOpts())).toBe(false);
    await expect(Sandbox.getInfo(sbx.sandboxId, sdkOpts())).rejects.toBeInstanceOf(SandboxNotFoundError);
    await expect(Sandbox.connect(sbx.sandboxId, sdkOpts())).rejects.toBeInstanceOf(SandboxNotFoundError);
  }, 60_000);

  sandboxTest("pausing an unknown sandbox is NotFound", async () => {
    await expect(Sandbox.pause("nosuchsandbox", sdkOpts())).rejects.toBeInstanceOf(SandboxNotFoundError);
  });
});
