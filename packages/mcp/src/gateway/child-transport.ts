// An MCP stdio transport over a child process started with an identity of its own (uid/gid), which the SDK's
// StdioClientTransport cannot do. Messages are newline-delimited JSON-RPC on stdin/stdout; stderr is handed to the
// caller (kept for crash reports); the exit is reported once, with its code or signal.
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { SpawnSpec } from "./server-command.js";

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the process could not be started at all (ENOENT, EACCES…). */
  error?: Error;
}

export interface ChildTransportOptions {
  spec: SpawnSpec;
  uid?: number | undefined;
  gid?: number | undefined;
  onStderr?: (chunk: Buffer) => void;
  onExit?: (exit: ChildExit) => void;
}

export class ChildTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private child: ChildProcessWithoutNullStreams | undefined;
  private readonly buffer = new ReadBuffer();
  private exited = false;

  constructor(private readonly opts: ChildTransportOptions) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  start(): Promise<void> {
    const { spec, uid, gid } = this.opts;
    return new Promise((resolve, reject) => {
      // Its own process group, so that a server's own children go with it when it is stopped.
      const child = spawn(spec.file, spec.args, { env: spec.env, cwd: spec.cwd, uid, gid, detached: true, stdio: "pipe" });
      this.child = child;
      const finish = (exit: ChildExit) => {
        if (this.exited) return;
        this.exited = true;
        this.opts.onExit?.(exit);
        this.onclose?.();
      };
      child.once("error", (error) => {
        if (child.pid === undefined) {
          reject(error);
          finish({ code: null, signal: null, error });
        } else this.onerror?.(error);
      });
      child.once("spawn", () => resolve());
      child.once("close", (code, signal) => finish({ code, signal }));
      // A grandchild that keeps the pipes open delays "close" indefinitely: the exit itself is what counts.
      child.once("exit", (code, signal) => setTimeout(() => finish({ code, signal }), 200).unref());
      child.stdout.on("data", (chunk: Buffer) => {
        this.buffer.append(chunk);
        for (;;) {
          let message: JSONRPCMessage | null;
          try {
            message = this.buffer.readMessage();
          } catch (error) {
            this.onerror?.(error as Error);
            continue;
          }
          if (message === null) break;
          this.onmessage?.(message);
        }
      });
      child.stderr.on("data", (chunk: Buffer) => this.opts.onStderr?.(chunk));
      // A server that dies mid-write leaves EPIPE on our side: the exit handler reports it.
      child.stdin.on("error", () => undefined);
      child.stdout.on("error", () => undefined);
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const child = this.child;
    if (!child || this.exited) return Promise.reject(new Error("server process is not running"));
    return new Promise((resolve) => {
      if (child.stdin.write(serializeMessage(message))) resolve();
      else child.stdin.once("drain", () => resolve());
    });
  }

  /** Stops the whole process group: TERM, then KILL after a grace period. */
  async close(): Promise<void> {
    const child = this.child;
    if (!child || this.exited || child.pid === undefined) return;
    const pid = child.pid;
    const gone = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    killGroup(pid, "SIGTERM");
    const timer = setTimeout(() => killGroup(pid, "SIGKILL"), 2_000);
    await gone;
    clearTimeout(timer);
  }
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}
