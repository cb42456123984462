// Per-sandbox egress limits (BURROW_EGRESS_CONN_PER_SEC, BURROW_EGRESS_BYTES_PER_SEC) on a Burrow server of this
// file's own, with the official SDK: a burst of new connections past the rate is refused, and a download is held to
// the byte rate both when forwarded (no rules) and through the egress proxy (a domain rule) — measured loosely, as a
// lower bound on the transfer's duration only. envd's own traffic is not limited (the SDK's file writes and commands
// go on working). Every address is the fake internet's (203.0.113.0/24) or this server's gateway.
import { rmSync } from "node:fs";
import { ALL_TRAFFIC, Sandbox } from "e2b";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DNS_ADDRESS, type FakeInternet, startFakeInternet } from "../helpers/fake-internet.js";
import { burrowDown, freePort, startServerProcess, stopServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { newTestInstance } from "../helpers/test-instance.js";

const A = "203.0.113.10";
const CONNECTIONS_PER_SECOND = 3;
const BYTES_PER_SECOND = 1024 * 1024;
const instance = newTestInstance("elimits");
let internet: FakeInternet;
let server: ServerProcess;
const created: Sandbox[] = [];

async function spawn(network?: { allowOut?: string[]; denyOut?: string[] }): Promise<Sandbox> {
  const sandbox = await Sandbox.create("base", {
    apiKey: server.apiKey,
    apiUrl: server.url,
    sandboxUrl: server.url,
    debug: false,
    timeoutMs: 300_000,
    ...(network ? { network } : {}),
  });
  created.push(sandbox);
  return sandbox;
}

async function sh(sandbox: Sandbox, command: string): Promise<string> {
  internet.assertRouted();
  const r = await sandbox.commands.run(`${command} 2>&1 || true`, { timeoutMs: 120_000 });
  return r.stdout.trim();
}

/** `<bytes> <seconds>` of a download of n bytes from the fake host. */
async function download(sandbox: Sandbox, url: string): Promise<{ bytes: number; seconds: number }> {
  const out = await sh(sandbox, `curl -s -m 100 -o /dev/null -w '%{size_download} %{time_total}' ${url}`);
  const [bytes, seconds] = out.split(" ").map(Number);
  return { bytes: bytes!, seconds: seconds! };
}

describe("egress limits (own server, fake internet)", () => {
  beforeAll(async () => {
    internet = await startFakeInternet([A], { names: { "allowed.test": A } });
    server = await startServerProcess(instance, await freePort(), ["--pool-size", "0"], {
      BURROW_DNS_UPSTREAM: DNS_ADDRESS,
      BURROW_EGRESS_CONN_PER_SEC: String(CONNECTIONS_PER_SECOND),
      BURROW_EGRESS_BYTES_PER_SEC: String(BYTES_PER_SECOND),
    });
  });

  afterAll(async () => {
    try {
      await Promise.all(created.map((s) => s.kill().catch(() => undefined)));
      if (server) await stopServerProcess(server, "SIGTERM");
      burrowDown(instance);
      rmSync(instance.stateDir, { recursive: true, force: true });
    } finally {
      await internet?.close();
    }
  });

  it("a burst of new connections past the rate is refused; the sandbox connects again once it slows down", async () => {
    const sandbox = await spawn();
    // 20 connections at once: the bucket holds CONNECTIONS_PER_SECOND, the rest are reset (curl's 000).
    const codes = (await sh(sandbox, `for i in $(seq 20); do curl -s -m 5 -o /dev/null -w '%{http_code}\\n' http://${A}/ & done; wait`)).split("\n");
    expect(codes).toHaveLength(20);
    const ok = codes.filter((c) => c === "200").length;
    expect(ok).toBeGreaterThan(0);
    expect(codes.filter((c) => c === "000").length).toBeGreaterThan(0);
    expect(ok + codes.filter((c) => c === "000").length).toBe(20);
    // A second later the bucket has refilled.
    await sh(sandbox, "sleep 2");
    expect(await sh(sandbox, `curl -s -m 5 http://${A}/`)).toBe(`hello from ${A}`);
  });

  it("a forwarded download is held to the byte rate (5 MiB at 1 MiB/s: at least 3 s), envd's traffic is not", async () => {
    const sandbox = await spawn();
    const { bytes, seconds } = await download(sandbox, `http://${A}/bytes/${5 * BYTES_PER_SECOND}`);
    expect(bytes).toBe(5 * BYTES_PER_SECOND);
    expect(seconds).toBeGreaterThanOrEqual(3);
    // 8 MiB into the sandbox through envd (a connection the host opened) and back: not limited, so not lost either.
    const data = new Uint8Array(8 * BYTES_PER_SECOND).map((_, i) => i % 251);
    await sandbox.files.write("/tmp/big", data.buffer);
    const back = await sandbox.files.read("/tmp/big", { format: "bytes" });
    expect(Buffer.from(back).equals(Buffer.from(data))).toBe(true);
  });

  it("a download through the egress proxy (a domain rule) is held to the byte rate too", async () => {
    const sandbox = await spawn({ allowOut: ["allowed.test"], denyOut: [ALL_TRAFFIC] });
    const { bytes, seconds } = await download(sandbox, `http://allowed.test/bytes/${5 * BYTES_PER_SECOND}`);
    expect(bytes).toBe(5 * BYTES_PER_SECOND);
    expect(seconds).toBeGreaterThanOrEqual(3);
  });
});
