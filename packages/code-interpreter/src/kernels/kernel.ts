// What every kind of kernel offers a context: run code and stream what it produces, be interrupted, have its
// environment changed, and die (observably). Python (and any Jupyter kernel) speaks ZeroMQ; JavaScript/TypeScript
// and bash contexts are Node and bash processes driven by the server directly.
import type { KernelExit } from "../errors.js";

export type KernelEvent =
  | { type: "execution_count"; count: number }
  | { type: "stream"; name: "stdout" | "stderr"; text: string; timestamp: string }
  /** A rich result: a MIME bundle (`text/plain`, `image/png`, `e2b/chart`…); the main result is the cell's value. */
  | { type: "display"; data: Record<string, unknown>; isMain: boolean }
  | { type: "error"; name: string; value: string; traceback: string };

export interface ExecuteOptions {
  /** Silent runs (environment changes) produce no execution count and no results. */
  silent?: boolean;
}

export interface Kernel {
  readonly language: string;
  readonly pid: number | undefined;
  /**
   * Run code; yields events until the kernel is idle again. Throws KernelExitedError when the process dies
   * first. One run at a time: the context serialises them.
   */
  execute(code: string, opts?: ExecuteOptions): AsyncIterable<KernelEvent>;
  /** Ask the running code to stop (SIGINT); the run still ends through execute(). */
  interrupt(): void;
  /** Set environment variables for the rest of the kernel's life. */
  setEnv(vars: Record<string, string>): Promise<void>;
  /** Set variables for one run; popEnv() puts back what was there before (or removes them). */
  pushEnv(vars: Record<string, string>): Promise<void>;
  popEnv(): Promise<void>;
  /** Resolves when the process has ended, however that happened. Never rejects. */
  readonly exited: Promise<KernelExit>;
  /** Kill the process (and everything it started) and wait for it. */
  close(): Promise<void>;
}

export interface StartKernelOptions {
  /** Language of the context (python, javascript, typescript, bash, or a Jupyter kernel's language). */
  language: string;
  cwd: string;
  env: Record<string, string>;
  signal?: AbortSignal | undefined;
}

export type KernelFactory = (opts: StartKernelOptions) => Promise<Kernel>;
