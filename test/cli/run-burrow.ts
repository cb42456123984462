// Runs the real `burrow` executable (the committed bin entry in front of the build output) as a child process.
import { spawn } from "node:child_process";
import { join } from "node:path";

export const REPO_ROOT = join(import.meta.dirname, "..", "..");
export const BURROW_BIN = join(REPO_ROOT, "packages", "cli", "bin", "burrow.js");

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  input?: string;
  /** Node options before the script, e.g. ["--import", hook]. */
  nodeArgs?: string[];
  cwd?: string;
}

/** `burrow ARGS…`; resolves with exit code and output whatever the exit code. */
export function runBurrow(args: string[], opts: RunOptions = {}): Promise<CliResult> {
  return runProcess(process.execPath, [...(opts.nodeArgs ?? []), BURROW_BIN, ...args], opts);
}

export function runProcess(command: string, args: string[], opts: RunOptions = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: opts.env ?? process.env, cwd: opts.cwd ?? REPO_ROOT, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(opts.input);
  });
}
