// The process behind a JavaScript/TypeScript context: runs cells (already transformed by the server) in its
// main context, so state, `require`, `import()` and timers persist between cells. Output written to
// process.stdout/stderr (console.log included) goes to the server over IPC in order with results; bytes that
// reach the real file descriptors (child processes with inherited stdio) are read by the server as well.
// No dependencies: this file runs as it is.
import { createRequire } from "node:module";
import { join } from "node:path";
import { inspect } from "node:util";
import * as vm from "node:vm";
import type { HostMessage, WorkerMessage } from "./worker-protocol.js";

const sendRaw = process.send?.bind(process);
if (!sendRaw) throw new Error("node-worker must be started with an IPC channel");
const send = (msg: WorkerMessage): void => {
  sendRaw(msg);
};

/** Output is coalesced into chunks of this size; a tight print loop becomes few IPC messages. */
const FLUSH_BYTES = 64 * 1024;

let current: number | undefined;
let cellNumber = 0;
const pending = { stdout: "", stderr: "" };
let flushScheduled = false;

function flush(): void {
  flushScheduled = false;
  if (current === undefined) {
    pending.stdout = pending.stderr = "";
    return;
  }
  for (const name of ["stdout", "stderr"] as const) {
    if (pending[name]) {
      send({ t: "out", id: current, name, text: pending[name] });
      pending[name] = "";
    }
  }
}

function capture(name: "stdout" | "stderr"): void {
  const stream = process[name];
  stream.write = ((chunk: unknown, encoding?: unknown, callback?: unknown): boolean => {
    const cb = typeof encoding === "function" ? encoding : callback;
    if (current !== undefined) {
      pending[name] += typeof chunk === "string" ? chunk : Buffer.from(chunk as Uint8Array).toString("utf8");
      if (pending[name].length >= FLUSH_BYTES) flush();
      else if (!flushScheduled) {
        flushScheduled = true;
        setImmediate(flush);
      }
    }
    if (typeof cb === "function") process.nextTick(cb as () => void);
    return true;
  }) as typeof stream.write;
}
capture("stdout");
capture("stderr");

// Cells resolve packages from the context's working directory, as a script there would.
(globalThis as Record<string, unknown>).require = createRequire(join(process.cwd(), "[cell]"));

// Background failures (a timer that throws, a rejected promise nobody awaits) are reported on stderr of the
// run in progress; they never end the context.
process.on("uncaughtException", (error) => {
  process.stderr.write(`Uncaught ${inspect(error)}\n`);
});
process.on("unhandledRejection", (reason) => {
  process.stderr.write(`Unhandled promise rejection: ${inspect(reason)}\n`);
});

let interruptRun: ((error: Error) => void) | undefined;
process.on("SIGINT", () => {
  const error = new Error("Execution interrupted");
  error.name = "InterruptedError";
  interruptRun?.(error);
});

function cleanStack(stack: string): string {
  return stack
    .split("\n")
    .filter((line) => !/node-worker|node:internal|\(node:vm|at new Script/.test(line))
    .join("\n");
}

function errorMessage(id: number, error: unknown): WorkerMessage {
  if (error instanceof Error) {
    const interrupted = (error as { code?: string }).code === "ERR_SCRIPT_EXECUTION_INTERRUPTED";
    const name = interrupted ? "InterruptedError" : error.name;
    const value = interrupted ? "Execution interrupted" : error.message;
    return { t: "error", id, name, value, traceback: cleanStack(error.stack ?? `${name}: ${value}`) };
  }
  return { t: "error", id, name: "Error", value: inspect(error), traceback: `Uncaught ${inspect(error)}` };
}

async function run(msg: Extract<HostMessage, { t: "run" }>): Promise<void> {
  current = msg.id;
  cellNumber++;
  try {
    const script = new vm.Script(msg.code, {
      filename: msg.filename || `cell-${cellNumber}.js`,
      importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
    });
    const interrupted = new Promise<never>((_, reject) => {
      interruptRun = reject;
    });
    const value: unknown = await Promise.race([script.runInThisContext({ breakOnSigint: true }), interrupted]);
    flush();
    if (value !== undefined && !msg.silent) {
      send({ t: "result", id: msg.id, data: { "text/plain": inspect(value, { depth: 4, maxArrayLength: 1000, maxStringLength: null }) } });
    }
  } catch (error) {
    flush();
    send(errorMessage(msg.id, error));
  } finally {
    interruptRun = undefined;
    flush();
    send({ t: "done", id: msg.id });
    current = undefined;
  }
}

const saved: Record<string, string | undefined>[] = [];

function changeEnv(msg: Extract<HostMessage, { t: "env" }>): void {
  const vars = msg.vars ?? {};
  if (msg.op === "push") saved.push(Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]])));
  if (msg.op === "pop") {
    for (const [key, value] of Object.entries(saved.pop() ?? {})) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  } else Object.assign(process.env, vars);
  send({ t: "done", id: msg.id });
}

process.on("message", (msg: HostMessage) => {
  if (msg.t === "run") void run(msg);
  else if (msg.t === "env") changeEnv(msg);
});

send({ t: "ready" });
