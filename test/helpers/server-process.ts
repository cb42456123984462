// A Burrow server in its own process (the real CLI), for tests that must SIGKILL and restart it.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import type { TestInstance } from "./test-instance.js";

const CLI = join(import.meta.dirname, "..", "..", "packages", "cli", "dist", "main.js");

/**
 * How to run the CLI for the instance: in its network namespace when it has one. nsenter joins the namespace only,
 * unlike `ip netns exec`, which also remounts /sys and so hides the cgroup hierarchy the orchestrator needs; nsenter
 * then execs node, so the child's PID is the server's own.
 */
function cliCommand(instance: TestInstance, args: string[]): [string, string[]] {
  if (instance.netns === undefined) return [process.execPath, [CLI, ...args]];
  return ["nsenter", [`--net=/run/netns/${instance.netns}`, "--", process.execPath, CLI, ...args]];
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  apiKey: string;
  output: () => string;
}

/**
 * `env`: extra environment for the server process only (BURROW_* settings), on top of the test's own. Public
 * registries are off unless a test turns them on: a test server never pulls from the internet.
 */
export async function startServerProcess(
  instance: TestInstance,
  port: number,
  extraArgs: string[] = [],
  env: Record<string, string> = {},
): Promise<ServerProcess> {
  const host = instance.host ?? "127.0.0.1";
  const [command, args] = cliCommand(instance, [
    "up",
    "--state-dir", instance.stateDir,
    "--instance", instance.instance,
    "--subnet", instance.subnet,
    "--port", String(port),
    "--host", host,
    ...extraArgs,
  ]);
  const child = spawn(
    command,
    args,
    { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, BURROW_LOG_LEVEL: "warn", BURROW_PUBLIC_REGISTRIES: "false", ...env } },
  );
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 300_000);
    const check = () => {
      if (output.includes("Burrow is listening on")) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on("data", check);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${output}`));
    });
  });
  child.removeAllListeners("exit");
  const apiKey = readFileSync(join(instance.stateDir, "api-key"), "utf8").trim();
  return { child, url: `http://${host}:${port}`, apiKey, output: () => output };
}

export async function stopServerProcess(server: ServerProcess, signal: NodeJS.Signals): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  const exited = new Promise((resolve) => server.child.once("exit", resolve));
  server.child.kill(signal);
  await exited;
}

/** `burrow down` for the instance: kills its sandboxes, removes its bridge, firewall tables and cgroups. */
export function burrowDown(instance: TestInstance): string {
  const [command, args] = cliCommand(instance, ["down", "--state-dir", instance.stateDir, "--instance", instance.instance, "--subnet", instance.subnet]);
  const result = spawnSync(command, args, { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`burrow down failed: ${result.stderr}`);
  return result.stdout;
}
