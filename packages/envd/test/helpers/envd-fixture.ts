// Starts the real envd bundle as a child process on a random loopback port, with a throwaway sandbox user.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Sandbox } from "e2b";
import { ENVD_VERSION } from "@burrow/protocol";

const pkgDir = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const BUNDLE = join(pkgDir, "dist", "envd.cjs");

let built = false;
/** Builds the bundle and native parts once per test file (fast: esbuild + two small C files). */
export function buildEnvd(): void {
  if (built) return;
  execFileSync(process.execPath, [join(pkgDir, "build.mjs")], { stdio: "inherit" });
  built = true;
}

export interface TestUser {
  name: string;
  uid: number;
  gid: number;
  home: string;
  remove(): void;
}

/** Creates a throwaway user (unique name, home under a temp dir) and returns a remover. Needs root. */
export function createTestUser(baseDir: string): TestUser {
  const name = `envdt${randomBytes(4).toString("hex")}`;
  const home = join(baseDir, "home", name);
  execFileSync("useradd", ["-m", "-d", home, "-s", "/bin/bash", "-U", name], { stdio: "ignore" });
  const line = readFileSync("/etc/passwd", "utf8").split("\n").find((l) => l.startsWith(`${name}:`));
  const [, , uid, gid] = (line ?? "").split(":");
  return {
    name,
    uid: Number(uid),
    gid: Number(gid),
    home,
    remove() {
      try {
        execFileSync("userdel", ["-f", name], { stdio: "ignore" });
      } catch {
        // already gone
      }
    },
  };
}

export interface EnvdInstance {
  url: string;
  port: number;
  pid: number;
  child: ChildProcess;
  /** milliseconds from spawn() to the first 204 from /health */
  startupMs: number;
  stderr: () => string;
  stop(): Promise<void>;
}

export async function startEnvd(env: Record<string, string> = {}): Promise<EnvdInstance> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [BUNDLE], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ENVD_PORT: "0", ENVD_HOST: "127.0.0.1", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`envd did not start: ${stderr}`)), 20_000);
    child.stderr!.on("data", (d: Buffer) => {
      stderr += d.toString();
      const m = /"msg":"listening".*"port":(\d+)/.exec(stderr);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`envd exited with ${code}: ${stderr}`));
    });
  });
  const url = `http://127.0.0.1:${port}`;
  for (;;) {
    const r = await fetch(`${url}/health`).catch(() => undefined);
    if (r?.status === 204) break;
  }
  const startupMs = performance.now() - t0;
  return {
    url,
    port,
    pid: child.pid!,
    child,
    startupMs,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      const t = setTimeout(() => child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(t);
    },
  };
}

export async function initEnvd(url: string, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${url}/init`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
}

/** The official SDK, pointed straight at this envd (no control plane involved). */
export function sdkSandbox(url: string, accessToken: string | undefined): Sandbox {
  const Ctor = Sandbox as unknown as new (opts: Record<string, unknown>) => Sandbox;
  return new Ctor({
    sandboxId: "envdtest",
    envdVersion: ENVD_VERSION,
    envdAccessToken: accessToken,
    sandboxUrl: url,
    apiKey: "e2b_" + "0".repeat(40),
    debug: false,
  });
}

export function tempDir(prefix: string): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** Full test environment: built envd, a throwaway user (default user), a workdir, the SDK. */
export async function setupEnvd(opts: { initToken?: string } = {}) {
  buildEnvd();
  const dir = tempDir("envd-test-");
  const cleanups: (() => unknown)[] = [() => dir.remove()];
  try {
    execFileSync("chmod", ["755", dir.path]);
    const user = createTestUser(dir.path);
    cleanups.unshift(() => user.remove());
    const envd = await startEnvd(opts.initToken ? { BURROW_ENVD_INIT_TOKEN: opts.initToken } : {});
    cleanups.unshift(() => envd.stop());
    const token = randomBytes(16).toString("hex");
    const init = await initEnvd(envd.url, { accessToken: token, defaultUser: user.name, envVars: { SANDBOX_VAR: "sbx", OVERRIDE_ME: "sandbox" } },
      opts.initToken ? { "X-Access-Token": opts.initToken } : {});
    if (init.status !== 204) throw new Error(`init failed: ${init.status} ${await init.text()}`);
    const sandbox = sdkSandbox(envd.url, token);
    return {
      envd, user, token, sandbox, dir: dir.path,
      async cleanup() {
        for (const c of cleanups) await c();
      },
    };
  } catch (err) {
    for (const c of cleanups) await c();
    throw err;
  }
}
