import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, connect as netConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const NATS_SERVER = "/usr/sbin/nats-server";

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const c = netConnect(port, "127.0.0.1");
    c.once("connect", () => {
      c.destroy();
      resolve(true);
    });
    c.once("error", () => resolve(false));
  });
}

/** A real nats-server with JetStream on a free loopback port and a temp store dir; restartable on the same dir. */
export class NatsServerFixture {
  private proc: ChildProcess | undefined;
  readonly storeDir: string;
  port = 0;

  private constructor() {
    this.storeDir = mkdtempSync(join(tmpdir(), "burrow-nats-"));
  }

  static async start(): Promise<NatsServerFixture> {
    const f = new NatsServerFixture();
    f.port = await freePort();
    try {
      await f.launch();
    } catch (e) {
      await f.stop();
      throw e;
    }
    return f;
  }

  get url(): string {
    return `127.0.0.1:${this.port}`;
  }

  private async launch(): Promise<void> {
    const p = spawn(NATS_SERVER, ["-a", "127.0.0.1", "-p", String(this.port), "-js", "-sd", this.storeDir], { stdio: "ignore" });
    this.proc = p;
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      if (p.exitCode !== null) throw new Error(`nats-server exited with ${p.exitCode}`);
      if (await canConnect(this.port)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error("nats-server did not start in 10 s");
  }

  private async kill(): Promise<void> {
    const p = this.proc;
    this.proc = undefined;
    if (!p || p.exitCode !== null || p.pid === undefined) return;
    const exited = new Promise<void>((r) => p.once("exit", () => r()));
    process.kill(p.pid, "SIGTERM");
    const t = setTimeout(() => p.pid !== undefined && p.exitCode === null && process.kill(p.pid, "SIGKILL"), 5000);
    await exited;
    clearTimeout(t);
  }

  /** Stops (SIGSTOP) or continues (SIGCONT) the server: its clients' requests wait, as on a stalled store. */
  pause(paused: boolean): void {
    const pid = this.proc?.pid;
    if (pid === undefined || this.proc?.exitCode !== null) throw new Error("nats-server is not running");
    process.kill(pid, paused ? "SIGSTOP" : "SIGCONT");
  }

  /** Stops the server and starts it again on the same port and store directory. */
  async restart(): Promise<void> {
    await this.kill();
    await this.launch();
  }

  async stop(): Promise<void> {
    try {
      await this.kill();
    } finally {
      rmSync(this.storeDir, { recursive: true, force: true });
    }
  }
}
