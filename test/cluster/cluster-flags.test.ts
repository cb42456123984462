// `burrow up`'s cluster flags are checked before anything starts: a bad one is a usage error (exit 2) naming it.
import { mkdtempSync, rmSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { runBurrow } from "../cli/run-burrow.js";

describe("burrow up --cluster", () => {
  const stateDir = mkdtempSync("/var/tmp/burrow-clflags-");
  afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

  it.each([
    [["--cluster", "http://127.0.0.1:4222", "--node-name", "n1"], /nats:\/\/ or tls:\/\/ URLs, got 'http:\/\/127.0.0.1:4222'/],
    [["--cluster", "nats://127.0.0.1:4222", "--node-name", "no.dots"], /node name must be/],
    [["--cluster", "nats://127.0.0.1:4222", "--node-name", "n1", "--node-url", "https://x:1"], /node URL must be http:\/\/HOST:PORT/],
  ])("refuses %j", async (args, message) => {
    const result = await runBurrow(["up", "--state-dir", stateDir, ...args], { env: { ...process.env, BURROW_CLUSTER_REPLICAS: "" } });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(message);
  });
});
