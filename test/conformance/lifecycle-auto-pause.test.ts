// E2B's sandbox lifecycle through the official SDK (`lifecycle: {onTimeout: 'pause', autoResume}` → create fields
// autoPause, autoPauseMemory, autoResume): at its timeout such a sandbox is paused instead of killed; with
// autoResume the first request routed to it (envd traffic: commands, files; a user port over HTTP or an upgrade)
// resumes it and is served (a health check does not: it only asks), without it only connect wakes it. connect never changes the lifecycle chosen at create.
// Also the create body's bad inputs and the lifecycle events on the bus.
import { request } from "node:http";
import { describe, expect } from "vitest";
import { Sandbox } from "e2b";
import { BusClient, type BusMessage } from "@burrow/sdk";
import { burrowEnv, sandboxTest, sdkOpts, TEMPLATE } from "./env.js";

const BOOT_ID = "/proc/sys/kernel/random/boot_id";
/** Counts in a shell variable (memory) and writes each value out: a restarted process would start again at 1. */
const COUNT_LOOP = `sh -c 'i=0; while true; do i=$((i+1)); echo $i > /home/user/count; sleep 0.2; done'`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Poll getInfo until the sandbox is in `state`; the test's own timeout bounds the wait. */
async function waitForState(sandboxId: string, state: "running" | "paused"): Promise<void> {
  while ((await Sandbox.getInfo(sandboxId, sdkOpts())).state !== state) await sleep(200);
}

/** Let the sandbox's timeout run out now (1 s), then wait until the server has paused it. */
async function pauseByTimeout(sbx: Sandbox): Promise<void> {
  await sbx.setTimeout(1_000);
  await waitForState(sbx.sandboxId, "paused");
}

function portRequest(port: number, sandboxId: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  const base = new URL(burrowEnv().sandboxUrl);
  return new Promise((resolve, reject) => {
    const req = request({ host: base.hostname, port: base.port, path: "/", headers: { host: `${port}-${sandboxId}.localhost`, ...headers } });
    req.on("response", (res) => {
      let body = "";
      res.on("data", (c) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode!, body }));
    });
    // An upgrade the sandbox accepted (101): what matters here is that the sandbox answered.
    req.on("upgrade", (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode!, body: "" });
    });
    req.on("error", reject);
    req.end();
  });
}

async function createRaw(body: unknown): Promise<{ status: number; json: { code?: number; message?: string; sandboxID?: string } }> {
  const env = burrowEnv();
  const res = await fetch(`${env.apiUrl}/v2/sandboxes`, {
    method: "POST",
    headers: { "X-API-KEY": env.apiKey, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as { code?: number; message?: string; sandboxID?: string } };
}

/** Lifecycle events of one sandbox, collected from the bus as they come. */
async function lifecycleEvents(sandboxId: string): Promise<{ events: Array<{ type: string; reason?: string; pauseKind?: string }>; close: () => void }> {
  const env = burrowEnv();
  const client = new BusClient({ baseUrl: env.apiUrl, apiKey: env.apiKey });
  const sub = await client.bus.subscribe(`sbx.*.${sandboxId}.lifecycle.>`);
  const events: Array<{ type: string; reason?: string; pauseKind?: string }> = [];
  void (async () => {
    for await (const m of sub as AsyncIterable<BusMessage>) events.push(JSON.parse(m.text ?? "{}"));
  })().catch(() => undefined);
  return { events, close: () => sub.close() };
}

describe("lifecycle: pause at the timeout", () => {
  sandboxTest("onTimeout 'pause' without autoResume: paused by its timeout, traffic fails, connect wakes it with memory", async ({ spawn }) => {
    const sbx = await spawn({ timeoutMs: 60_000, lifecycle: { onTimeout: "pause" } });
    const bus = await lifecycleEvents(sbx.sandboxId);
    try {
      expect((await sbx.getInfo()).lifecycle).toEqual({ onTimeout: "pause", autoResume: false });
      await sbx.files.write("/home/user/kept.txt", "before the pause");
      const counter = await sbx.commands.run(COUNT_LOOP, { background: true });

      await pauseByTimeout(sbx);
      const listed = await Sandbox.list({ ...sdkOpts(), query: { state: ["paused"] } }).nextItems();
      expect(listed.map((s) => s.sandboxId)).toContain(sbx.sandboxId);
      // Without autoResume nothing routed to it wakes it: envd answers E2B's 502 "paused", ports too.
      expect(await sbx.isRunning()).toBe(false);
      await expect(sbx.commands.run("true")).rejects.toThrow();
      await expect(sbx.files.read("/home/user/kept.txt")).rejects.toThrow();
      const port = await portRequest(8080, sbx.sandboxId);
      expect(port.status).toBe(502);
      expect(JSON.parse(port.body)).toEqual({ sandboxId: sbx.sandboxId, message: "The sandbox is paused", code: 502 });
      expect((await sbx.getInfo()).state).toBe("paused");

      const resumed = await Sandbox.connect(sbx.sandboxId, { ...sdkOpts(), timeoutMs: 60_000 });
      const info = await resumed.getInfo();
      expect(info.state).toBe("running");
      expect(info.lifecycle).toEqual({ onTimeout: "pause", autoResume: false });
      expect(await resumed.files.read("/home/user/kept.txt")).toBe("before the pause");
      // The pause kept memory: the very same process is still there.
      expect((await resumed.commands.list()).map((p) => p.pid)).toContain(counter.pid);

      // connect kept the lifecycle (E2B #875): the next timeout pauses it again instead of killing it.
      await pauseByTimeout(resumed);
      expect((await Sandbox.getInfo(sbx.sandboxId, sdkOpts())).lifecycle).toEqual({ onTimeout: "pause", autoResume: false });

      await Sandbox.connect(sbx.sandboxId, sdkOpts());
      const paused = bus.events.filter((e) => e.type === "paused");
      expect(paused.length).toBeGreaterThanOrEqual(2);
      expect(paused[0]).toMatchObject({ reason: "timeout", pauseKind: "memory" });
      expect(bus.events.filter((e) => e.type === "resumed")[0]).toMatchObject({ reason: "api" });
      expect(bus.events.some((e) => e.type === "timed_out" || e.type === "killed")).toBe(false);
    } finally {
      bus.close();
    }
  }, 120_000);

  sandboxTest("autoResume: a commands.run, a files.read and an HTTP request to a port each wake it and are served", async ({ spawn }) => {
    const sbx = await spawn({ timeoutMs: 60_000, lifecycle: { onTimeout: "pause", autoResume: true } });
    const bus = await lifecycleEvents(sbx.sandboxId);
    try {
      expect((await sbx.getInfo()).lifecycle).toEqual({ onTimeout: "pause", autoResume: true });
      await sbx.files.write("/home/user/www/index.html", "served after a wake-up");
      await sbx.commands.run("cd /home/user/www && python3 -m http.server 8080", { background: true });
      for (let i = 0; (await portRequest(8080, sbx.sandboxId)).status !== 200; i++) await sleep(200);
      const counter = await sbx.commands.run(COUNT_LOOP, { background: true });

      // A command.
      await pauseByTimeout(sbx);
      const run = await sbx.commands.run("cat /home/user/www/index.html");
      expect(run.stdout).toBe("served after a wake-up");
      let info = await sbx.getInfo();
      expect(info.state).toBe("running");
      // The timeout started again from the create's 60 s, as a connect's would.
      expect(info.endAt.getTime() - Date.now()).toBeGreaterThan(30_000);
      expect((await sbx.commands.list()).map((p) => p.pid)).toContain(counter.pid);

      // Asking whether it runs does not wake it (the SDK also asks after a stream broke off, as a pause does).
      await pauseByTimeout(sbx);
      expect(await sbx.isRunning()).toBe(false);
      expect((await sbx.getInfo()).state).toBe("paused");
      // A signed download URL, fetched without any header, is routed to it and wakes it.
      const signed = await fetch(await sbx.downloadUrl("/home/user/www/index.html", { useSignatureExpiration: 60_000 }));
      expect(signed.status).toBe(200);
      expect(await signed.text()).toBe("served after a wake-up");

      // A file read; several at once share one resume.
      await pauseByTimeout(sbx);
      const reads = await Promise.all(Array.from({ length: 5 }, () => sbx.files.read("/home/user/www/index.html")));
      expect(reads).toEqual(Array(5).fill("served after a wake-up"));
      expect((await sbx.getInfo()).state).toBe("running");

      // A user port, plain HTTP; the server in the sandbox kept running through the pause.
      await pauseByTimeout(sbx);
      expect(await portRequest(8080, sbx.sandboxId)).toEqual({ status: 200, body: "served after a wake-up" });

      // An upgrade request: routed through the upgrade path of the gateway, answered by the sandbox's server.
      await pauseByTimeout(sbx);
      const upgraded = await portRequest(8080, sbx.sandboxId, { connection: "Upgrade", upgrade: "websocket" });
      expect(upgraded.status).not.toBe(502);
      expect((await sbx.getInfo()).state).toBe("running");

      // connect after it all: 200 (running), lifecycle unchanged.
      const connected = await Sandbox.connect(sbx.sandboxId, sdkOpts());
      expect((await connected.getInfo()).lifecycle).toEqual({ onTimeout: "pause", autoResume: true });

      const autoResumes = bus.events.filter((e) => e.type === "resumed");
      expect(autoResumes).toHaveLength(5);
      for (const e of autoResumes) expect(e).toMatchObject({ reason: "auto_resume" });
      expect(bus.events.filter((e) => e.type === "paused")).toHaveLength(5);
    } finally {
      bus.close();
    }
  }, 180_000);

  sandboxTest("autoResume applies to an explicit pause too; a filesystem pause is never woken by traffic", async ({ spawn }) => {
    const sbx = await spawn({ timeoutMs: 60_000, lifecycle: { onTimeout: "kill", autoResume: false } });
    expect((await sbx.getInfo()).lifecycle).toEqual({ onTimeout: "kill", autoResume: false });
    const env = burrowEnv();
    // E2B accepts autoResume without autoPause: it resumes whatever memory pause the sandbox is in.
    const created = await createRaw({ templateID: TEMPLATE, timeout: 60, autoResume: { enabled: true } });
    expect(created.status).toBe(201);
    const id = created.json.sandboxID!;
    try {
      const other = await Sandbox.connect(id, sdkOpts());
      expect((await other.getInfo()).lifecycle).toEqual({ onTimeout: "kill", autoResume: true });
      expect(await other.pause()).toBe(true);
      expect((await other.commands.run("echo awake")).stdout.trim()).toBe("awake");
      expect(await other.pause({ keepMemory: false })).toBe(true);
      expect(await other.isRunning()).toBe(false);
      await expect(other.files.read("/etc/hostname")).rejects.toThrow();
      expect((await other.getInfo()).state).toBe("paused");
    } finally {
      await fetch(`${env.apiUrl}/sandboxes/${id}`, { method: "DELETE", headers: { "X-API-KEY": env.apiKey } });
    }
  }, 120_000);

  sandboxTest("onTimeout {action: 'pause', keepMemory: false}: a filesystem pause; connect cold-boots it, files kept", async ({ spawn }) => {
    const sbx = await spawn({ timeoutMs: 60_000, lifecycle: { onTimeout: { action: "pause", keepMemory: false } } });
    const bus = await lifecycleEvents(sbx.sandboxId);
    try {
      expect((await sbx.getInfo()).lifecycle).toEqual({ onTimeout: "pause", autoResume: false });
      await sbx.files.write("/home/user/kept.txt", "files stay");
      const bootId = (await sbx.files.read(BOOT_ID)).trim();
      const sleeper = await sbx.commands.run("sleep 600", { background: true });

      await pauseByTimeout(sbx);
      await expect(sbx.commands.run("true")).rejects.toThrow();
      const resumed = await Sandbox.connect(sbx.sandboxId, sdkOpts());
      expect(await resumed.files.read("/home/user/kept.txt")).toBe("files stay");
      // Processes ended with the pause and the sandbox booted again.
      expect((await resumed.commands.list()).map((p) => p.pid)).not.toContain(sleeper.pid);
      expect((await resumed.files.read(BOOT_ID)).trim()).not.toBe(bootId);
      expect(bus.events.find((e) => e.type === "paused")).toMatchObject({ reason: "timeout", pauseKind: "filesystem" });
    } finally {
      bus.close();
    }
  }, 120_000);
});

describe("lifecycle: bad input", () => {
  sandboxTest("wrong types and combinations E2B refuses answer 400 in E2B's shape and create nothing", async () => {
    const before = (await Sandbox.list(sdkOpts()).nextItems()).length;
    const bad: unknown[] = [
      { templateID: TEMPLATE, autoPause: "yes" },
      { templateID: TEMPLATE, autoPause: 1 },
      { templateID: TEMPLATE, autoPause: null },
      { templateID: TEMPLATE, autoPauseMemory: "false", autoPause: true },
      { templateID: TEMPLATE, autoResume: true },
      { templateID: TEMPLATE, autoResume: { enabled: "true" } },
      { templateID: TEMPLATE, autoResume: {} },
      { templateID: TEMPLATE, autoResume: null },
      // A filesystem pause only applies to an auto-pause, and traffic cannot resume one.
      { templateID: TEMPLATE, autoPauseMemory: false },
      { templateID: TEMPLATE, autoPause: true, autoPauseMemory: false, autoResume: { enabled: true } },
    ];
    for (const body of bad) {
      const { status, json } = await createRaw(body);
      expect({ body, status }).toEqual({ body, status: 400 });
      expect(json).toEqual({ code: 400, message: expect.any(String) });
    }
    const { json } = await createRaw({ templateID: TEMPLATE, autoPauseMemory: false });
    expect(json.message).toContain("autoPauseMemory");
    expect((await Sandbox.list(sdkOpts()).nextItems()).length).toBe(before);
  });
});
