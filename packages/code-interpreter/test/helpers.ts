// Runs the execution server on the host (loopback, random port) with the real envd bundle beside it, for the
// suites that drive it with the official SDK. Python needs Debian's ipykernel and is covered end to end in
// sandboxes (test/code-interpreter); these suites use JavaScript and bash contexts.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { envdRuntimeFiles } from "@burrow/envd";
import { createCodeInterpreter, type CodeInterpreter } from "../src/code-interpreter.js";
import { resolveConfig, type CodeInterpreterConfig } from "../src/config.js";
import { silentLogger } from "../src/log.js";

export interface Envd {
  url: string;
  /** envd's /init, as the orchestrator calls it (sets the access token and the sandbox's variables). */
  init(body: { accessToken?: string; envVars?: Record<string, string> }): Promise<void>;
  stop(): Promise<void>;
}

export async function startEnvd(): Promise<Envd> {
  const initToken = randomBytes(16).toString("hex");
  const child: ChildProcess = spawn(process.execPath, [envdRuntimeFiles().bundle], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ENVD_PORT: "0", ENVD_HOST: "127.0.0.1", BURROW_ENVD_INIT_TOKEN: initToken },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`envd did not start: ${stderr}`)), 20_000);
    child.stderr?.on("data", (d: Buffer) => {
      stderr += d.toString();
      const m = /"msg":"listening".*"port":(\d+)/.exec(stderr);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.once("exit", () => reject(new Error(`envd exited: ${stderr}`)));
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    async init(body) {
      const res = await fetch(`${url}/init`, {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-Access-Token": initToken },
        body: JSON.stringify(body),
      });
      if (!res.ok) throw new Error(`envd /init: ${res.status} ${await res.text()}`);
    },
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGKILL");
      await exited;
    },
  };
}

export interface HostInterpreter {
  url: string;
  interpreter: CodeInterpreter;
  envd: Envd;
  cwd: string;
  close(): Promise<void>;
}

export async function startInterpreter(overrides: Partial<CodeInterpreterConfig> = {}): Promise<HostInterpreter> {
  const envd = await startEnvd();
  const cwd = await mkdtemp(join(tmpdir(), "burrow-interpreter-test-"));
  const config = resolveConfig({ host: "127.0.0.1", port: 0, envdUrl: envd.url, defaultCwd: cwd, defaultContexts: ["javascript"], ...overrides }, {});
  let interpreter: CodeInterpreter | undefined;
  let address;
  try {
    interpreter = await createCodeInterpreter(config, silentLogger);
    address = await interpreter.listen();
    await interpreter.ready;
  } catch (error) {
    await interpreter?.close();
    await envd.stop();
    await rm(cwd, { recursive: true, force: true });
    throw error;
  }
  return {
    url: `http://127.0.0.1:${address.port}`,
    interpreter,
    envd,
    cwd,
    async close() {
      await interpreter.close();
      await envd.stop();
      await rm(cwd, { recursive: true, force: true });
    },
  };
}
