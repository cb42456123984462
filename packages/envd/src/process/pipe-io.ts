import { spawn } from "node:child_process";
import type { Readable } from "node:stream";
import { identityArgv, signalProcessTree, type OutputStream, type ProcessIO, type SpawnSpec } from "./process-io.js";

// After the process exits, output still in the pipes is read for up to this long; a grandchild that keeps the
// pipes open (`cmd &`) must not hold the end event back (upstream closes the pipes when the process exits).
const EXIT_FLUSH_MS = 200;
/** A grandchild writing without pause cannot hold the end back longer than this. */
const EXIT_FLUSH_MAX_MS = 2_000;

/** Spawns a process with pipes. Resolves once it has a pid; rejects with the spawn error (e.g. ENOENT). */
export function spawnPipeProcess(spec: SpawnSpec, withStdin: boolean): Promise<ProcessIO> {
  const { file, args, nodeIds } = identityArgv(spec);
  const child = spawn(file, args, {
    cwd: spec.cwd,
    env: spec.env,
    // own session: signals reach the whole command, and it survives envd's process group being signalled
    detached: true,
    stdio: [withStdin ? "pipe" : "ignore", "pipe", "pipe"],
    ...nodeIds,
  });
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("spawn", () => {
      child.off("error", reject);
      child.on("error", () => {}); // later errors (EPIPE on stdin) surface through the write path
      child.stdin?.on("error", () => {});
      resolve(wrap(child.pid as number, child.stdin, child.stdout as Readable, child.stderr as Readable, child));
    });
  });
}

function wrap(
  pid: number,
  stdin: NodeJS.WritableStream | null,
  stdout: Readable,
  stderr: Readable,
  child: import("node:child_process").ChildProcess,
): ProcessIO {
  let stdinOpen = stdin !== null;
  let dataCb: ((s: OutputStream, d: Buffer) => void) | undefined;
  stdout.on("data", (d: Buffer) => dataCb?.("stdout", d));
  stderr.on("data", (d: Buffer) => dataCb?.("stderr", d));
  return {
    pid,
    isPty: false,
    get hasInput() {
      return stdinOpen;
    },
    write(data) {
      stdin?.write(data);
    },
    closeStdin() {
      stdinOpen = false;
      stdin?.end();
    },
    resize() {
      throw new Error("not a PTY");
    },
    pause() {
      stdout.pause();
      stderr.pause();
    },
    resume() {
      stdout.resume();
      stderr.resume();
    },
    onData(cb) {
      dataCb = cb;
    },
    onExit(cb) {
      let done = false;
      const finish = (code: number | null, signal: NodeJS.Signals | null) => {
        if (done) return;
        done = true;
        stdinOpen = false;
        stdout.destroy();
        stderr.destroy();
        cb(code, signal);
      };
      child.once("exit", (code, signal) => {
        // Output still in the pipes is read until both close, or until they have been quiet for EXIT_FLUSH_MS. The
        // deadline is checked only after a poll phase (setImmediate): when envd itself was starved of CPU (a loaded
        // host, the sandbox's CPU quota), timers run before the poll phase that reads the pipes, and a bare timer
        // ended commands with their output unread.
        let quietSince = Date.now();
        const noteData = () => (quietSince = Date.now());
        stdout.on("data", noteData);
        stderr.on("data", noteData);
        const givenUpAt = Date.now() + EXIT_FLUSH_MAX_MS;
        let timer: NodeJS.Timeout | undefined;
        const check = () => {
          const now = Date.now();
          if (now - quietSince >= EXIT_FLUSH_MS || now >= givenUpAt) return finish(code, signal);
          timer = setTimeout(() => setImmediate(check), EXIT_FLUSH_MS - (now - quietSince));
        };
        timer = setTimeout(() => setImmediate(check), EXIT_FLUSH_MS);
        // flowing again so buffered output drains even if a consumer had paused us
        stdout.resume();
        stderr.resume();
        child.once("close", () => {
          clearTimeout(timer);
          finish(code, signal);
        });
      });
    },
  };
}

export { signalProcessTree };
