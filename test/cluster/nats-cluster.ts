// A NATS JetStream cluster of real nats-server processes on loopback ports, each with its own store directory,
// routed to each other (JetStream's Raft needs a quorum: 2 of 3). Stopped by PID, store directories removed.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { connect as netConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { NATS_SERVER } from "../../packages/bus/test/helpers/nats-server.js";
import { freePort } from "../helpers/server-process.js";

interface Member {
  name: string;
  port: number;
  clusterPort: number;
  storeDir: string;
  proc?: ChildProcess;
}

function canConnect(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const c = netConnect(port, host);
    c.once("connect", () => (c.destroy(), resolve(true)));
    c.once("error", () => resolve(false));
  });
}

export class NatsCluster {
  private constructor(
    private readonly members: Member[],
    private readonly host: string,
  ) {}

  /**
   * Start `size` servers routed to each other; with `launched` < size only the first ones run (no quorum yet). `host`:
   * the address they listen on (clients and routes), e.g. the host's address on a test LAN of network namespaces.
   */
  static async start(size = 3, launched = size, host = "127.0.0.1"): Promise<NatsCluster> {
    const members: Member[] = [];
    for (let i = 0; i < size; i++) {
      members.push({ name: `nats-${i + 1}`, port: await freePort(), clusterPort: await freePort(), storeDir: mkdtempSync(join(tmpdir(), "burrow-natsc-")) });
    }
    const cluster = new NatsCluster(members, host);
    try {
      for (const m of members.slice(0, launched)) cluster.launch(m);
      for (const m of members.slice(0, launched)) await cluster.waitListening(m);
      if (launched === size) await cluster.waitForJetStream();
    } catch (err) {
      await cluster.stop();
      throw err;
    }
    return cluster;
  }

  /** `nats://HOST:PORT` of each server. */
  get urls(): string[] {
    return this.members.map((m) => `nats://${this.host}:${m.port}`);
  }

  /** Launch the servers not yet running and wait for JetStream to answer. */
  async launchRest(): Promise<void> {
    const rest = this.members.filter((m) => !m.proc);
    for (const m of rest) this.launch(m);
    for (const m of rest) await this.waitListening(m);
    await this.waitForJetStream();
  }

  /** SIGKILL one server (by index), as a machine lost. */
  async kill(index: number): Promise<void> {
    const m = this.members[index]!;
    await this.end(m, "SIGKILL");
  }

  async stop(): Promise<void> {
    for (const m of this.members) {
      await this.end(m, "SIGTERM");
      rmSync(m.storeDir, { recursive: true, force: true });
    }
  }

  private launch(m: Member): void {
    const routes = this.members.filter((o) => o !== m).map((o) => `nats://${this.host}:${o.clusterPort}`).join(",");
    m.proc = spawn(
      NATS_SERVER,
      ["-a", this.host, "-p", String(m.port), "-n", m.name, "-js", "-sd", m.storeDir, "--cluster_name", "burrow-test", "--cluster", `nats://${this.host}:${m.clusterPort}`, "--routes", routes],
      { stdio: "ignore" },
    );
  }

  private async waitListening(m: Member): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (!(await canConnect(this.host, m.port))) {
      if (m.proc?.exitCode !== null) throw new Error(`${m.name} exited with ${m.proc?.exitCode}`);
      if (Date.now() > deadline) throw new Error(`${m.name} did not listen in 10 s`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** JetStream answers only once its meta group has a leader. */
  private async waitForJetStream(): Promise<void> {
    const nc = await connect({ servers: this.urls });
    try {
      const deadline = Date.now() + 30_000;
      for (;;) {
        try {
          const jsm = await jetstreamManager(nc);
          await jsm.getAccountInfo();
          return;
        } catch (err) {
          if (Date.now() > deadline) throw err;
          await new Promise((r) => setTimeout(r, 250));
        }
      }
    } finally {
      await nc.close();
    }
  }

  private async end(m: Member, signal: NodeJS.Signals): Promise<void> {
    const p = m.proc;
    m.proc = undefined;
    if (!p || p.exitCode !== null || p.signalCode !== null || p.pid === undefined) return;
    const exited = new Promise<void>((r) => p.once("exit", () => r()));
    process.kill(p.pid, signal);
    await exited;
  }
}
