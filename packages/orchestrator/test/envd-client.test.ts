// The envd client against a real envd on the host (the envd package's fixture): processes, the background start
// command, signals, watches, /files, /health and /init, with their errors and cancellation.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { BurrowError, Code } from "@burrow/protocol";
import {
  envdBaseUrl,
  initEnvd,
  readFile,
  runProcess,
  sendSignal,
  startBackgroundProcess,
  streamProcess,
  waitForEnvd,
  watchDir,
  writeFile,
  type DirEvent,
  type EnvdTarget,
  type ProcessEvent,
} from "../src/envd-client/index.js";
import { setupEnvd, startEnvd } from "../../envd/test/helpers/envd-fixture.js";
import { POLL } from "./helpers/poll.js";

let env: Awaited<ReturnType<typeof setupEnvd>>;
let target: EnvdTarget;
let user: string;

beforeAll(async () => {
  env = await setupEnvd();
  target = { host: "127.0.0.1", port: env.envd.port, accessToken: env.token };
  user = env.user.name;
});
afterAll(async () => {
  await env?.cleanup();
});

const sh = (line: string) => ({ cmd: "/bin/sh", args: ["-c", line] });

async function failure(promise: Promise<unknown>): Promise<BurrowError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof BurrowError)) throw new Error(`expected a BurrowError, got ${String(error)}`);
  return error;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A loopback port nobody listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("streamProcess", () => {
  test("yields start, stdout and stderr in order, and the end with exit code and status", async () => {
    const events: ProcessEvent[] = [];
    for await (const e of streamProcess(target, { ...sh("printf out; printf err >&2; exit 3"), user })) events.push(e);
    const text = (stream: string) =>
      Buffer.concat(events.flatMap((e) => (e.kind === "data" && e.stream === stream ? [e.data] : []))).toString();
    expect(events[0]).toMatchObject({ kind: "start" });
    expect((events[0] as { pid: number }).pid).toBeGreaterThan(0);
    expect(text("stdout")).toBe("out");
    expect(text("stderr")).toBe("err");
    expect(events.at(-1)).toEqual({ kind: "end", exitCode: 3, status: "exit status 3", error: "exit status 3" });
  });

  test("hands output on as it comes, before the process ends", async () => {
    const gate = join(env.dir, `gate-${randomBytes(4).toString("hex")}`);
    const seen: string[] = [];
    for await (const e of streamProcess(target, {
      ...sh(`echo first; while [ ! -e "${gate}" ]; do sleep 0.05; done; echo second`),
      user,
    })) {
      if (e.kind !== "data") continue;
      seen.push(Buffer.from(e.data).toString());
      // The process waits for this file: "first" must have arrived while it was still running.
      if (seen.join("") === "first\n") writeFileSync(gate, "");
    }
    expect(seen.join("")).toBe("first\nsecond\n");
  });

  test("runs in a terminal when asked: output comes as pty", async () => {
    const events: ProcessEvent[] = [];
    for await (const e of streamProcess(target, { ...sh("tty >/dev/null && echo in-a-tty"), user, pty: { cols: 80, rows: 24 } })) {
      events.push(e);
    }
    const pty = Buffer.concat(events.flatMap((e) => (e.kind === "data" && e.stream === "pty" ? [e.data] : []))).toString();
    expect(pty).toContain("in-a-tty");
    expect(events.some((e) => e.kind === "data" && e.stream !== "pty")).toBe(false);
    expect(events.at(-1)).toMatchObject({ kind: "end", exitCode: 0 });
  });

  test("timeoutMs bounds the process's lifetime: envd kills it and the call fails deadline_exceeded", async () => {
    let pid = 0;
    const error = await failure(
      (async () => {
        for await (const e of streamProcess(target, { ...sh("sleep 60"), user, timeoutMs: 500 })) if (e.kind === "start") pid = e.pid;
      })(),
    );
    expect(error.code).toBe(Code.DeadlineExceeded);
    expect(pid).toBeGreaterThan(0);
    await expect.poll(() => alive(pid), { ...POLL, message: "envd to kill the process at its deadline" }).toBe(false);
  });
});

describe("runProcess", () => {
  test("runs with the user, cwd and environment asked for; a non-zero exit is a result", async () => {
    const cwd = join(env.dir, "cwd");
    mkdirSync(cwd, { recursive: true });
    const chunks: string[] = [];
    const result = await runProcess(
      target,
      { ...sh('echo "$(id -un) $(pwd) $GREETING"; exit 7'), user, cwd, envs: { GREETING: "hi" } },
      (_stream, data) => chunks.push(Buffer.from(data).toString()),
    );
    expect(chunks.join("")).toBe(`${user} ${cwd} hi\n`);
    expect(result).toMatchObject({ exitCode: 7, status: "exit status 7" });
    expect(result.pid).toBeGreaterThan(0);
  });

  test("a process envd cannot start is a BurrowError with envd's code", async () => {
    const error = await failure(runProcess(target, { ...sh("true"), user, cwd: join(env.dir, "no-such-dir") }));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.message).toContain("no-such-dir");
  });

  test("a wrong access token is unauthenticated", async () => {
    const error = await failure(runProcess({ ...target, accessToken: "wrong" }, { ...sh("true"), user }));
    expect(error.code).toBe(Code.Unauthenticated);
  });

  test("an aborted signal cancels the call", async () => {
    const error = await failure(runProcess(target, { ...sh("sleep 60"), user, signal: AbortSignal.abort() }));
    expect(error.code).toBe(Code.Canceled);
  });

  test("nobody listening is unavailable", async () => {
    const error = await failure(runProcess({ ...target, port: await closedPort() }, { ...sh("true"), user }));
    expect(error.code).toBe(Code.Unavailable);
  });
});

describe("startBackgroundProcess and sendSignal", () => {
  test("returns with the pid while the process runs; detaching leaves it running; SIGKILL ends it", async () => {
    const started = await startBackgroundProcess(target, { ...sh("echo ready; exec sleep 60"), user, tag: "bg-test" });
    expect(started.pid).toBeGreaterThan(0);
    await expect.poll(() => started.output(), { ...POLL, message: "the start output to be kept" }).toBe("ready\n");
    started.detach();
    expect(await started.ended).toBeInstanceOf(BurrowError);
    expect(alive(started.pid)).toBe(true);
    await sendSignal(target, started.pid, "SIGKILL", { user });
    await expect.poll(() => alive(started.pid), { ...POLL, message: "SIGKILL to end the process" }).toBe(false);
  });

  test("ended resolves with the exit status; output keeps the tail within the limit", async () => {
    const started = await startBackgroundProcess(target, { ...sh("seq 1 1000; exit 4"), user, outputLimitBytes: 10 });
    expect(await started.ended).toMatchObject({ exitCode: 4, status: "exit status 4" });
    expect(started.output()).toBe("\n999\n1000\n");
  });

  test("a process that cannot start rejects", async () => {
    const error = await failure(startBackgroundProcess({ ...target, accessToken: "wrong" }, { ...sh("true"), user }));
    expect(error.code).toBe(Code.Unauthenticated);
  });

  test("signalling a pid envd does not run is not_found", async () => {
    const error = await failure(sendSignal(target, 999_999, "SIGKILL", { user }));
    expect(error.code).toBe(Code.NotFound);
  });
});

describe("watchDir", () => {
  test("reports changes made after it resolves, until the signal aborts", async () => {
    const dir = join(env.dir, `watched-${randomBytes(4).toString("hex")}`);
    mkdirSync(dir);
    execFileSync("chown", [user, dir]);
    const stop = new AbortController();
    const events = await watchDir(target, { path: dir, recursive: false, user, signal: stop.signal });
    writeFileSync(join(dir, "new.txt"), "x");
    const seen: DirEvent[] = [];
    const error = await failure(
      (async () => {
        for await (const e of events) {
          seen.push(e);
          if (e.name === "new.txt" && e.type === "write") stop.abort();
        }
      })(),
    );
    expect(error.code).toBe(Code.Canceled);
    expect(seen).toContainEqual({ name: "new.txt", type: "create" });
  });

  test("a missing directory is not_found", async () => {
    const error = await failure(watchDir(target, { path: join(env.dir, "missing"), recursive: true, user, signal: new AbortController().signal }));
    expect(error.code).toBe(Code.NotFound);
    expect(error.message).toContain("cannot watch");
  });
});

describe("readFile and writeFile", () => {
  test("round-trip bytes; the written file belongs to the user and missing parents are made", async () => {
    const path = join(env.dir, `files-${randomBytes(4).toString("hex")}`, "deep", "data.bin");
    const data = randomBytes(200_000);
    await writeFile(target, path, data, { user });
    expect(statSync(path).uid).toBe(env.user.uid);
    expect(Buffer.from(await readFile(target, path, { user, maxBytes: data.length }))).toEqual(data);
  });

  test("a file over maxBytes is refused, sized or not", async () => {
    const path = join(env.dir, "sized.txt");
    writeFileSync(path, "0123456789");
    expect((await failure(readFile(target, path, { user, maxBytes: 9 }))).code).toBe(Code.ResourceExhausted);
    // /proc files have no size: envd streams them chunked.
    const unsized = await failure(readFile(target, "/proc/self/maps", { user, maxBytes: 16 }));
    expect(unsized.code).toBe(Code.ResourceExhausted);
    expect((await readFile(target, "/proc/self/maps", { user, maxBytes: 1 << 20 })).length).toBeGreaterThan(16);
  });

  test("a missing file is not_found; a wrong token is refused", async () => {
    expect((await failure(readFile(target, join(env.dir, "missing"), { user, maxBytes: 10 }))).code).toBe(Code.NotFound);
    const refused = await failure(writeFile({ ...target, accessToken: "wrong" }, join(env.dir, "nope"), new Uint8Array(1), { user }));
    expect(refused.message).toContain("cannot write");
    expect(existsSync(join(env.dir, "nope"))).toBe(false);
  });
});

describe("waitForEnvd and initEnvd", () => {
  test("waitForEnvd returns once envd answers; with nobody listening it fails deadline_exceeded", async () => {
    await waitForEnvd(target, { timeoutMs: 5000 });
    const error = await failure(waitForEnvd({ host: "127.0.0.1", port: await closedPort() }, { timeoutMs: 300 }));
    expect(error.code).toBe(Code.DeadlineExceeded);
  });

  test("waitForEnvd stops at an aborted signal", async () => {
    const stop = new AbortController();
    const waiting = waitForEnvd({ host: "127.0.0.1", port: await closedPort() }, { timeoutMs: 60_000, signal: stop.signal });
    stop.abort();
    await expect(waiting).rejects.toMatchObject({ name: "AbortError" });
  });

  test("initEnvd takes the init token on a fresh envd and sets the access token and env", async () => {
    const initToken = randomBytes(8).toString("hex");
    const fresh = await startEnvd({ BURROW_ENVD_INIT_TOKEN: initToken });
    try {
      const at = (accessToken?: string): EnvdTarget => ({ host: "127.0.0.1", port: fresh.port, accessToken });
      const init = { envVars: { FROM_INIT: "yes" }, accessToken: "new-token", defaultUser: user };
      const refused = await failure(initEnvd(at("not-the-init-token"), init));
      expect(refused.code).toBe(Code.Internal);
      expect(refused.message).toContain("401");
      await initEnvd(at(initToken), init);
      const out: string[] = [];
      await runProcess(at("new-token"), { ...sh('echo "$FROM_INIT $(id -un)"'), user }, (_s, d) => out.push(Buffer.from(d).toString()));
      expect(out.join("")).toBe(`yes ${user}\n`);
    } finally {
      await fresh.stop();
    }
  });
});

test("envdBaseUrl brackets IPv6 hosts", () => {
  expect(envdBaseUrl({ host: "::1", port: 49983 })).toBe("http://[::1]:49983");
  expect(envdBaseUrl({ host: "10.11.0.2", port: 49983 })).toBe("http://10.11.0.2:49983");
});
