import type { MessageInitShape } from "@bufbuild/protobuf";
import { processPb, type Process } from "@burrow/protocol";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import { stat } from "node:fs/promises";
import type { EnvdContext } from "../context.js";
import { resolveUserPath } from "../filesystem/paths.js";
import { drainWithKeepalive, type EventQueue } from "../rpc/event-queue.js";
import { rpcUser } from "../rpc/request-user.js";
import { connectTimeoutMs, keepaliveIntervalMs } from "../rpc/stream-headers.js";
import { processEnvironment } from "./environment.js";
import { ManagedProcess, type ProcessOutput } from "./managed-process.js";
import { createOutputLogBudget, createOutputLogger } from "./output-log.js";
import { spawnPipeProcess } from "./pipe-io.js";
import { spawnPtyProcess } from "./pty-io.js";

type EventInit = MessageInitShape<typeof processPb.ProcessEventSchema>;

function selectorOf(sel: processPb.ProcessSelector | undefined): { pid?: number; tag?: string } {
  switch (sel?.selector.case) {
    case "pid":
      return { pid: sel.selector.value };
    case "tag":
      return { tag: sel.selector.value };
    default:
      throw new ConnectError("process selector (pid or tag) is required", Code.InvalidArgument);
  }
}

function describe(sel: { pid?: number; tag?: string }): string {
  return sel.pid !== undefined ? `process with pid ${sel.pid}` : `process with tag '${sel.tag}'`;
}

function toEvent(o: ProcessOutput): EventInit {
  if (o.kind === "end") return { event: { case: "end", value: o.end } };
  return { event: { case: "data", value: { output: { case: o.stream, value: o.data } } } };
}

/** start event, then output and end (keepalives while idle); detaching never affects the process. */
async function* follow(
  p: ManagedProcess,
  queue: EventQueue<ProcessOutput>,
  ctx: HandlerContext,
): AsyncGenerator<{ event: EventInit }> {
  // A client that went away must stop holding the process's output back at once. The generator's finally is not
  // enough: while the generator is parked at a yield (the response's write waiting for a socket that is gone), it
  // runs only when the RPC layer gets round to closing the generator, and until then the process stays paused on a
  // full queue nobody reads.
  const detach = () => p.unsubscribe(queue);
  ctx.signal.addEventListener("abort", detach, { once: true });
  try {
    yield { event: { event: { case: "start", value: { pid: p.pid } } } };
    yield* drainWithKeepalive(queue, ctx.signal, keepaliveIntervalMs(ctx.requestHeader), (o): { event: EventInit } => ({ event: toEvent(o) }),
      (): { event: EventInit } => ({ event: { event: { case: "keepalive", value: {} } } }));
  } finally {
    ctx.signal.removeEventListener("abort", detach);
    p.unsubscribe(queue);
  }
}

export function createProcessService(env: EnvdContext): ServiceImpl<typeof Process> {
  const { processes, log } = env;
  const outputBudget = createOutputLogBudget();

  function running(sel: processPb.ProcessSelector | undefined): ManagedProcess {
    const s = selectorOf(sel);
    const p = processes.findRunning(s);
    if (!p) throw new ConnectError(`${describe(s)} not found`, Code.NotFound);
    return p;
  }

  async function startProcess(req: processPb.StartRequest, ctx: HandlerContext): Promise<ManagedProcess> {
    const user = rpcUser(env, ctx);
    const cfg = req.process;
    if (!cfg?.cmd) throw new ConnectError("process.cmd is required", Code.InvalidArgument);
    let cwd: string;
    try {
      cwd = resolveUserPath(cfg.cwd ?? "", user, env.state.defaultWorkdir);
    } catch (err) {
      throw new ConnectError((err as Error).message, Code.InvalidArgument);
    }
    const cwdStat = await stat(cwd).catch(() => undefined);
    if (!cwdStat?.isDirectory()) throw new ConnectError(`cwd '${cwd}' does not exist`, Code.InvalidArgument);
    const spec = { cmd: cfg.cmd, args: cfg.args, cwd, user, env: processEnvironment(user, env.state.envVars, cfg.envs) };
    let io;
    try {
      io = req.pty
        ? spawnPtyProcess(spec, req.pty.size?.cols ?? 80, req.pty.size?.rows ?? 24)
        : await spawnPipeProcess(spec, req.stdin !== false);
    } catch (err) {
      throw new ConnectError(`failed to start process '${cfg.cmd}': ${(err as Error).message}`,
        Code.InvalidArgument, undefined, undefined, err);
    }
    const output = createOutputLogger(log, outputBudget, { pid: io.pid, tag: req.tag });
    const p = new ManagedProcess(io, { cmd: cfg.cmd, args: cfg.args, envs: cfg.envs, cwd: cfg.cwd, tag: req.tag }, (o) =>
      o.kind === "data" ? output.data(o.stream, o.data) : output.end());
    processes.add(p);
    const lifetime = connectTimeoutMs(ctx.requestHeader);
    if (lifetime !== undefined) p.setLifetime(lifetime);
    log.info("process started", { pid: p.pid, cmd: cfg.cmd, user: user.name, pty: p.isPty, tag: req.tag });
    void p.ended.then((e) => log.info("process ended", { pid: p.pid, tag: req.tag, exitCode: e.exitCode, status: e.status }));
    return p;
  }

  return {
    list() {
      return {
        processes: processes.running().map((p) => ({
          pid: p.pid,
          tag: p.description.tag,
          config: { cmd: p.description.cmd, args: p.description.args, envs: p.description.envs, cwd: p.description.cwd },
        })),
      };
    },

    async *start(req, ctx) {
      const p = await startProcess(req, ctx);
      yield* follow(p, p.subscribe(), ctx);
    },

    async *connect(req, ctx) {
      const s = selectorOf(req.process);
      const p = processes.find(s);
      if (!p) throw new ConnectError(`${describe(s)} not found`, Code.NotFound);
      yield* follow(p, p.subscribe(), ctx);
    },

    update(req) {
      const p = running(req.process);
      if (!p.isPty) throw new ConnectError("process has no PTY", Code.FailedPrecondition);
      if (req.pty?.size) p.resize(req.pty.size.cols, req.pty.size.rows);
      return {};
    },

    sendInput(req) {
      writeInput(running(req.process), req.input);
      return {};
    },

    async streamInput(reqs) {
      let p: ManagedProcess | undefined;
      for await (const r of reqs) {
        if (r.event.case === "start") p = running(r.event.value.process);
        else if (r.event.case === "data") {
          if (!p) throw new ConnectError("first message must be a start event", Code.FailedPrecondition);
          writeInput(p, r.event.value.input);
        }
      }
      return {};
    },

    sendSignal(req) {
      const p = running(req.process);
      const sig = req.signal === processPb.Signal.SIGKILL ? "SIGKILL"
        : req.signal === processPb.Signal.SIGTERM ? "SIGTERM" : undefined;
      if (!sig) throw new ConnectError("signal must be SIGNAL_SIGTERM or SIGNAL_SIGKILL", Code.InvalidArgument);
      p.signal(sig);
      return {};
    },

    closeStdin(req) {
      const p = running(req.process);
      if (p.isPty) {
        throw new ConnectError("cannot close stdin of a PTY process; send 0x04 (EOF) instead", Code.FailedPrecondition);
      }
      p.closeStdin();
      return {};
    },
  };
}

function writeInput(p: ManagedProcess, input: processPb.ProcessInput | undefined): void {
  const c = input?.input;
  if (!c?.case) throw new ConnectError("input is required", Code.InvalidArgument);
  if (c.case === "pty" && !p.isPty) throw new ConnectError("process has no PTY; send stdin", Code.FailedPrecondition);
  if (!p.hasInput) {
    throw new ConnectError("stdin is not open (start the process with stdin: true)", Code.FailedPrecondition);
  }
  p.write(Buffer.from(c.value));
}

