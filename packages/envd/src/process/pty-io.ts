import { nodePty } from "../native/native-modules.js";
import { identityArgv, type OutputStream, type ProcessIO, type SpawnSpec } from "./process-io.js";

/** Spawns a process on a new pseudo-terminal; node-pty is loaded on the first call only. */
export function spawnPtyProcess(spec: SpawnSpec, cols: number, rows: number): ProcessIO {
  const { file, args, nodeIds } = identityArgv(spec);
  const term = nodePty().spawn(file, args, {
    name: spec.env.TERM ?? "xterm-256color",
    cols: clampSize(cols, 80),
    rows: clampSize(rows, 24),
    cwd: spec.cwd,
    env: spec.env,
    encoding: null, // raw bytes: the client decodes, and a UTF-8 sequence may span chunks
    ...nodeIds,
  });
  let alive = true;
  let dataCb: ((s: OutputStream, d: Buffer) => void) | undefined;
  term.onData((d: string | Buffer) => dataCb?.("pty", typeof d === "string" ? Buffer.from(d) : d));
  return {
    pid: term.pid,
    isPty: true,
    get hasInput() {
      return alive;
    },
    write(data) {
      term.write(data);
    },
    closeStdin() {
      throw new Error("a PTY has no separate stdin; send 0x04 (EOF) instead");
    },
    resize(c, r) {
      term.resize(clampSize(c, 80), clampSize(r, 24));
    },
    pause() {
      term.pause();
    },
    resume() {
      term.resume();
    },
    onData(cb) {
      dataCb = cb;
    },
    onExit(cb) {
      term.onExit(({ exitCode, signal }) => {
        alive = false;
        cb(signal ? null : exitCode, signal ? signal : null);
      });
    },
  };
}

function clampSize(n: number, fallback: number): number {
  return Number.isInteger(n) && n > 0 ? Math.min(n, 10_000) : fallback;
}
