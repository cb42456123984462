import { processPb } from "@burrow/protocol";
import { Code, ConnectError } from "@connectrpc/connect";
import { CommandExitError, InvalidArgumentError, type Sandbox } from "e2b";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { setupEnvd, type TestUser } from "./helpers/envd-fixture.js";
import { rpcClients } from "./helpers/rpc-client.js";

let env: Awaited<ReturnType<typeof setupEnvd>>;
let sbx: Sandbox;
let user: TestUser;
let rpc: ReturnType<typeof rpcClients>;

beforeAll(async () => {
  env = await setupEnvd();
  sbx = env.sandbox;
  user = env.user;
  rpc = rpcClients(env.envd.url, env.token);
});
afterAll(async () => {
  await env?.cleanup();
});

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

describe("commands (official SDK)", () => {
  test("foreground run returns stdout, stderr and exit code", async () => {
    const r = await sbx.commands.run("echo hello; echo oops >&2");
    expect(r).toMatchObject({ stdout: "hello\n", stderr: "oops\n", exitCode: 0 });
  });

  test("non-zero exit throws CommandExitError with Go's status text", async () => {
    const err = await sbx.commands.run("echo partial; exit 3").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CommandExitError);
    expect(err).toMatchObject({ exitCode: 3, error: "exit status 3", stdout: "partial\n" });
  });

  test("runs as the default user with its groups, or as root when asked", async () => {
    const r = await sbx.commands.run("id -u; id -g; id -G; pwd");
    const [uid, gid, groups, cwd] = r.stdout.trim().split("\n");
    expect(Number(uid)).toBe(user.uid);
    expect(Number(gid)).toBe(user.gid);
    expect(groups?.split(" ").map(Number)).not.toContain(0); // no root group leaks into user commands
    expect(cwd).toBe(user.home);
    expect((await sbx.commands.run("id -u", { user: "root" })).stdout.trim()).toBe("0");
  });

  test("env precedence: login defaults < sandbox envVars < request envs", async () => {
    const r = await sbx.commands.run('echo "$HOME|$USER|$LOGNAME|$SANDBOX_VAR|$OVERRIDE_ME|$BURROW_ENVD_INIT_TOKEN"', {
      envs: { OVERRIDE_ME: "request" },
    });
    expect(r.stdout.trim()).toBe(`${user.home}|${user.name}|${user.name}|sbx|request|`);
    const home = await sbx.commands.run("echo $HOME", { envs: { HOME: "/custom" } });
    expect(home.stdout.trim()).toBe("/custom");
  });

  test("cwd option, and a missing cwd is invalid_argument", async () => {
    expect((await sbx.commands.run("pwd", { cwd: "/tmp" })).stdout.trim()).toBe("/tmp");
    const err = await sbx.commands.run("pwd", { cwd: "/definitely/missing" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect(String((err as Error).message)).toContain("cwd '/definitely/missing' does not exist");
  });

  test("stdin: sendStdin then closeStdin delivers EOF", async () => {
    const h = await sbx.commands.run("cat", { background: true, stdin: true });
    await sbx.commands.sendStdin(h.pid, "hello ");
    await h.sendStdin("world\n");
    await h.closeStdin();
    const r = await h.wait();
    expect(r.stdout).toBe("hello world\n");
  });

  test("without stdin the command reads EOF immediately", async () => {
    const r = await sbx.commands.run("cat; echo after");
    expect(r.stdout).toBe("after\n");
  });

  test("background process: list, disconnect keeps it alive, connect, kill", async () => {
    const h = await sbx.commands.run("echo started; sleep 60", { background: true });
    const listed = await sbx.commands.list();
    const info = listed.find((p) => p.pid === h.pid);
    expect(info).toMatchObject({ cmd: "/bin/bash", args: ["-l", "-c", "echo started; sleep 60"] });

    await h.disconnect();
    expect((await sbx.commands.list()).map((p) => p.pid)).toContain(h.pid);

    const again = await sbx.commands.connect(h.pid);
    expect(await sbx.commands.kill(h.pid)).toBe(true);
    const err = await again.wait().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CommandExitError);
    expect(err).toMatchObject({ exitCode: -1, error: "signal: killed" });
    expect((await sbx.commands.list()).map((p) => p.pid)).not.toContain(h.pid);
    expect(await sbx.commands.kill(h.pid)).toBe(false);
  });

  test("connect to an already-exited process returns its end event", async () => {
    const h = await sbx.commands.run("exit 7", { background: true });
    await h.wait().catch(() => undefined);
    const late = await sbx.commands.connect(h.pid);
    await expect(late.wait()).rejects.toMatchObject({ exitCode: 7, error: "exit status 7" });
  });

  test("Connect-Timeout-Ms on Start is the process lifetime", async () => {
    const h = await sbx.commands.run("sleep 60", { background: true, timeoutMs: 1500 });
    await h.wait().catch(() => undefined); // the client stream times out too
    // the process itself was killed: a late Connect sees its end event
    const events = await collect(rpc.process.connect({ process: { selector: { case: "pid", value: h.pid } } }));
    const end = events.map((e) => e.event?.event).find((e) => e?.case === "end");
    expect(end?.value).toMatchObject({ exitCode: -1, exited: false, status: "signal: killed" });
  });

  test("a stream past its Connect-Timeout-Ms ends with deadline_exceeded, not as a clean end", async () => {
    // The header alone (no client-side timeout): what ends the stream is envd's answer.
    const err = await collect(rpc.process.start(
      { process: { cmd: "/bin/sh", args: ["-c", "sleep 30"] } },
      { headers: { "Connect-Timeout-Ms": "800" } },
    )).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.DeadlineExceeded);
  });

  test("large output of an unattended background process does not block it", async () => {
    const h = await sbx.commands.run("head -c 20000000 /dev/zero; echo done >&2", { background: true });
    await h.disconnect();
    const late = await sbx.commands.connect(h.pid).catch(() => undefined);
    // either still running (then it finishes) or already ended: in both cases it ends with exit 0
    const events = await collect(rpc.process.connect({ process: { selector: { case: "pid", value: h.pid } } }));
    const end = events.map((e) => e.event?.event).find((e) => e?.case === "end");
    expect(end?.value).toMatchObject({ exitCode: 0, exited: true, status: "exit status 0" });
    await late?.disconnect();
  });
});

describe("a client that goes away", () => {
  test("does not hold the process's output back", async () => {
    // The client disconnects right after the start event, while envd is still writing output to it. Each process
    // must run to its end on its own: a stream left subscribed would pause it on a queue nobody reads until its
    // lifetime (10 s here) kills it (exit -1). Repeated because the disconnect must land mid-write.
    for (let i = 0; i < 20; i++) {
      const h = await sbx.commands.run("head -c 12000000 /dev/zero", { background: true, timeoutMs: 10_000 });
      await h.disconnect();
      const events = await collect(rpc.process.connect({ process: { selector: { case: "pid", value: h.pid } } }));
      const end = events.map((e) => e.event?.event).find((e) => e?.case === "end");
      expect(end?.value).toMatchObject({ exitCode: 0, exited: true });
    }
  }, 60_000);
});

describe("pty (official SDK)", () => {
  test("create, input, resize, EOF", async () => {
    let out = "";
    const h = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => void (out += new TextDecoder().decode(d)) });
    const until = async (re: RegExp) => {
      while (!re.test(out)) await new Promise((r) => setTimeout(r, 20));
    };
    await sbx.pty.sendInput(h.pid, new TextEncoder().encode("echo $((6*7))-$TERM\n"));
    await until(/42-xterm-256color/);
    await sbx.pty.resize(h.pid, { cols: 123, rows: 45 });
    await sbx.pty.sendInput(h.pid, new TextEncoder().encode("stty size\n"));
    await until(/45 123/);
    await sbx.pty.sendInput(h.pid, new TextEncoder().encode("\x04"));
    const r = await h.wait();
    expect(r.exitCode).toBe(0);
  });

  test("kill", async () => {
    const h = await sbx.pty.create({ cols: 80, rows: 24, onData: () => {} });
    expect(await sbx.pty.kill(h.pid)).toBe(true);
    await expect(h.wait()).rejects.toMatchObject({ exitCode: -1, error: "signal: killed" });
  });
});

describe("process RPCs (Connect client)", () => {
  test("StreamInput (client streaming) writes stdin", async () => {
    const stream = rpc.process.start({ process: { cmd: "/bin/sh", args: ["-c", "head -c 6"] }, stdin: true });
    const it = stream[Symbol.asyncIterator]();
    const first = await it.next();
    expect(first.value.event?.event.case).toBe("start");
    const pid = (first.value.event?.event.value as processPb.ProcessEvent_StartEvent).pid;
    async function* input(): AsyncGenerator<Partial<processPb.StreamInputRequest>> {
      yield { event: { case: "start", value: { process: { selector: { case: "pid", value: pid } } } } } as never;
      yield { event: { case: "data", value: { input: { input: { case: "stdin", value: new TextEncoder().encode("abcdef") } } } } } as never;
    }
    await rpc.process.streamInput(input() as never);
    let stdout = "";
    let end: processPb.ProcessEvent_EndEvent | undefined;
    for (let r = await it.next(); !r.done; r = await it.next()) {
      const ev = r.value.event?.event;
      if (ev?.case === "data" && ev.value.output.case === "stdout") stdout += new TextDecoder().decode(ev.value.output.value);
      if (ev?.case === "end") end = ev.value;
    }
    expect(stdout).toBe("abcdef");
    expect(end).toMatchObject({ exitCode: 0, exited: true, status: "exit status 0" });
  });

  test("keepalive events flow while the process is silent; SIGTERM gives 'signal: terminated'", async () => {
    const stream = rpc.process.start({ process: { cmd: "/bin/sleep", args: ["30"] } }, { headers: { "Keepalive-Ping-Interval": "1" } });
    const cases: string[] = [];
    for await (const r of stream) {
      const ev = r.event?.event;
      cases.push(ev?.case ?? "none");
      if (ev?.case === "start") continue;
      if (ev?.case === "keepalive" && !cases.includes("signalled")) {
        const pid = (await rpc.process.list({})).processes.find((p) => p.config?.cmd === "/bin/sleep")!.pid;
        await rpc.process.sendSignal({ process: { selector: { case: "pid", value: pid } }, signal: processPb.Signal.SIGTERM });
        cases.push("signalled");
      }
      if (ev?.case === "end") expect(ev.value).toMatchObject({ exitCode: -1, status: "signal: terminated" });
    }
    expect(cases[0]).toBe("start");
    expect(cases).toContain("keepalive");
    expect(cases.at(-1)).toBe("end");
  });

  test("tags select processes; unknown pid is not_found; CloseStdin on a PTY is refused", async () => {
    const stream = rpc.process.start({ process: { cmd: "/bin/cat" }, tag: "my-tag", pty: { size: { cols: 80, rows: 24 } } });
    const it = stream[Symbol.asyncIterator]();
    await it.next();
    const listed = (await rpc.process.list({})).processes.find((p) => p.tag === "my-tag");
    expect(listed).toBeDefined();
    const byTag = { selector: { case: "tag" as const, value: "my-tag" } };
    await expect(rpc.process.closeStdin({ process: byTag })).rejects.toMatchObject({ code: Code.FailedPrecondition });
    await rpc.process.sendSignal({ process: byTag, signal: processPb.Signal.SIGKILL });
    for (let r = await it.next(); !r.done; r = await it.next()) void r;
    const missing = { process: { selector: { case: "pid" as const, value: 999_999 } }, signal: processPb.Signal.SIGKILL };
    const err = await rpc.process.sendSignal(missing).catch((e: unknown) => e);
    expect(ConnectError.from(err).code).toBe(Code.NotFound);
    await expect(rpc.process.sendSignal({ process: byTag, signal: processPb.Signal.UNSPECIFIED })).rejects
      .toMatchObject({ code: Code.NotFound });
  });

  test("unknown user is unauthenticated; missing cmd is invalid_argument", async () => {
    const other = rpcClients(env.envd.url, env.token, "nosuchuser");
    await expect(other.process.list({})).resolves.toBeDefined(); // List ignores the user
    await expect(collect(other.process.start({ process: { cmd: "/bin/true" } }))).rejects.toMatchObject({ code: Code.Unauthenticated });
    await expect(collect(rpc.process.start({ process: { cmd: "" } }))).rejects.toMatchObject({ code: Code.InvalidArgument });
  });
});
