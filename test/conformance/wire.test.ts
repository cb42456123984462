// The envd wire contract through the gateway, by raw fetch: stream framing, the start event
// first, keepalives at the requested interval, end events in Go's shapes, the end-stream envelope, and /init
// refusing callers without the token.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Sandbox } from "e2b";
import { burrowEnv, hasBurrowEnv, sdkOpts, TEMPLATE } from "./env.js";

const maybe = hasBurrowEnv ? describe : describe.skip;

function envelope(message: unknown): Uint8Array<ArrayBuffer> {
  const payload = new TextEncoder().encode(JSON.stringify(message));
  const out = new Uint8Array(5 + payload.length);
  new DataView(out.buffer).setUint32(1, payload.length);
  out.set(payload, 5);
  return out;
}

function frames(body: Uint8Array): { flags: number; json: Record<string, unknown> }[] {
  const out: { flags: number; json: Record<string, unknown> }[] = [];
  let at = 0;
  while (at + 5 <= body.length) {
    const len = new DataView(body.buffer, body.byteOffset + at + 1, 4).getUint32(0);
    out.push({ flags: body[at]!, json: JSON.parse(new TextDecoder().decode(body.subarray(at + 5, at + 5 + len))) });
    at += 5 + len;
  }
  expect(at).toBe(body.length);
  return out;
}

maybe("envd wire", () => {
  let sbx: Sandbox;
  let token: string;
  const headers = (extra: Record<string, string> = {}) => ({
    "E2b-Sandbox-Id": sbx.sandboxId,
    "X-Access-Token": token,
    "connect-protocol-version": "1",
    ...extra,
  });
  const stream = async (method: string, message: unknown, extra: Record<string, string> = {}) => {
    const res = await fetch(`${burrowEnv().sandboxUrl}/${method}`, {
      method: "POST",
      body: envelope(message),
      headers: headers({ "content-type": "application/connect+json", ...extra }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/connect+json");
    return frames(new Uint8Array(await res.arrayBuffer()));
  };

  beforeAll(async () => {
    sbx = await Sandbox.create(TEMPLATE, { ...sdkOpts(), timeoutMs: 120_000 });
    const detail = await fetch(`${burrowEnv().apiUrl}/sandboxes/${sbx.sandboxId}`, { headers: { "X-API-KEY": burrowEnv().apiKey } });
    token = ((await detail.json()) as { envdAccessToken: string }).envdAccessToken;
  });
  afterAll(async () => {
    await sbx?.kill().catch(() => undefined);
  });

  test("Start: start first, data, end with Go's status strings, then an empty end-stream", async () => {
    const f = await stream("process.Process/Start", { process: { cmd: "/bin/sh", args: ["-c", "echo hi; exit 3"] } });
    expect(f[0]!.json).toMatchObject({ event: { start: { pid: expect.any(Number) } } });
    const data = f.filter((x) => (x.json.event as Record<string, unknown> | undefined)?.data);
    const stdout = data.map((x) => Buffer.from(((x.json.event as { data: { stdout?: string } }).data.stdout ?? ""), "base64").toString()).join("");
    expect(stdout).toBe("hi\n");
    const end = f.at(-2)!.json.event as { end: Record<string, unknown> };
    expect(end.end).toMatchObject({ exitCode: 3, exited: true, status: "exit status 3", error: "exit status 3" });
    expect(f.at(-1)).toEqual({ flags: 2, json: {} });
  });

  test("Start: a killed process ends with exitCode -1, exited false, 'signal: killed'", async () => {
    const f = await stream("process.Process/Start", { process: { cmd: "/bin/sh", args: ["-c", "kill -9 $$"] } });
    const end = f.at(-2)!.json.event as { end: Record<string, unknown> };
    expect(end.end).toMatchObject({ exitCode: -1, status: "signal: killed" });
    expect(end.end.exited ?? false).toBe(false);
  });

  test("Start: keepalives flow at the requested interval while the process is silent", async () => {
    const f = await stream("process.Process/Start", { process: { cmd: "/bin/sh", args: ["-c", "sleep 3.5"] } }, { "keepalive-ping-interval": "1" });
    const keepalives = f.filter((x) => (x.json.event as Record<string, unknown> | undefined)?.keepalive !== undefined);
    expect(keepalives.length).toBeGreaterThanOrEqual(2);
    expect(f[0]!.json).toMatchObject({ event: { start: {} } });
  });

  test("Start: Connect-Timeout-Ms ends the stream with deadline_exceeded and kills the process", async () => {
    const f = await stream(
      "process.Process/Start",
      { process: { cmd: "/bin/sh", args: ["-c", "sleep 41"] } },
      { "connect-timeout-ms": "1000" },
    );
    const last = f.at(-1)!;
    expect(last.flags).toBe(2);
    // Either an end event followed by a clean end-stream, or an end-stream carrying deadline_exceeded.
    const ended = f.some((x) => (x.json.event as Record<string, unknown> | undefined)?.end) || (last.json.error as { code?: string } | undefined)?.code === "deadline_exceeded";
    expect(ended).toBe(true);
    expect((await sbx.commands.run("pgrep -f 'slee[p] 41' || echo none")).stdout.trim()).toBe("none");
  });

  test("WatchDir: start first, keepalives, ends at its deadline", async () => {
    const f = await stream(
      "filesystem.Filesystem/WatchDir",
      { path: "/tmp" },
      { "keepalive-ping-interval": "1", "connect-timeout-ms": "2500" },
    );
    expect(f[0]!.json).toEqual({ start: {} });
    expect(f.some((x) => x.json.keepalive !== undefined)).toBe(true);
    expect(f.at(-1)!.flags).toBe(2);
  });

  test("unary: camelCase fields, enum names, int64 as strings", async () => {
    const res = await fetch(`${burrowEnv().sandboxUrl}/filesystem.Filesystem/Stat`, {
      method: "POST",
      body: JSON.stringify({ path: "/etc/passwd" }),
      headers: headers({ "content-type": "application/json" }),
    });
    expect(res.status).toBe(200);
    const { entry } = (await res.json()) as { entry: Record<string, unknown> };
    expect(entry).toMatchObject({ name: "passwd", type: "FILE_TYPE_FILE", path: "/etc/passwd", permissions: "-rw-r--r--", owner: "root" });
    expect(typeof entry.size).toBe("string");
    expect(entry.modifiedTime).toMatch(/^\d{4}-\d\d-\d\dT/);
    const missing = await fetch(`${burrowEnv().sandboxUrl}/filesystem.Filesystem/Stat`, {
      method: "POST",
      body: JSON.stringify({ path: "/nope" }),
      headers: headers({ "content-type": "application/json" }),
    });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ code: "not_found", message: expect.any(String) });
  });

  test("/init through the gateway needs the current token", async () => {
    for (const extra of [{}, { "X-Access-Token": "guess" }] as Record<string, string>[]) {
      const res = await fetch(`${burrowEnv().sandboxUrl}/init`, {
        method: "POST",
        body: JSON.stringify({ accessToken: "taken-over", envVars: { EVIL: "1" } }),
        headers: { "E2b-Sandbox-Id": sbx.sandboxId, "content-type": "application/json", ...extra },
      });
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ code: 401 });
    }
    expect((await sbx.commands.run('echo "[$EVIL]"')).stdout).toBe("[]\n");
  });

  test("GET /envs returns the sandbox's env vars (with the token)", async () => {
    const res = await fetch(`${burrowEnv().sandboxUrl}/envs`, { headers: headers() });
    expect(res.status).toBe(200);
    expect(typeof (await res.json())).toBe("object");
  });
});
