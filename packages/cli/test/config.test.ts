// The CLI's one configuration resolver: flags over environment over named defaults, validated, frozen.
import { describe, expect, it } from "vitest";
import * as orchestrator from "@burrow/orchestrator";
import * as server from "@burrow/server";
import { CliError } from "../src/cli-error.js";
import { DEFAULT_POOL_SIZE, DEFAULT_STATE_DIR, DEFAULT_SUBNET, resolveCliConfig } from "../src/config.js";

function usageErrorOf(fn: () => unknown): CliError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(CliError);
    expect((error as CliError).exitCode).toBe(2);
    return error as CliError;
  }
  throw new Error("expected a usage error");
}

describe("resolveCliConfig", () => {
  it("applies the named defaults when neither flags nor environment say anything", () => {
    const config = resolveCliConfig({}, {});
    expect(config).toEqual({
      stateDir: "/var/lib/burrow",
      instance: "main",
      subnet: "10.213.0.0/16",
      poolSize: 2,
      bus: { kind: "embedded" },
      logLevel: "info",
      server: {},
      apiUrl: "http://localhost:3000",
      sandboxUrl: "http://localhost:3000",
      apiKey: null,
    });
  });

  it("uses the same defaults as the orchestrator and the server it configures", () => {
    expect(DEFAULT_STATE_DIR).toBe(orchestrator.DEFAULT_STATE_DIR);
    expect(DEFAULT_STATE_DIR).toBe(server.DEFAULT_STATE_DIR);
    expect(DEFAULT_SUBNET).toBe(orchestrator.DEFAULT_SUBNET);
  });

  it("takes a flag over its environment variable, and the variable over the default", () => {
    const env = { BURROW_POOL_SIZE: "5", BURROW_STATE_DIR: "/srv/burrow", BURROW_INSTANCE: "env", BURROW_SUBNET: "10.9.0.0/16", BURROW_BUS: "nats://a:4222" };
    const fromEnv = resolveCliConfig({}, env);
    expect(fromEnv).toMatchObject({ poolSize: 5, stateDir: "/srv/burrow", instance: "env", subnet: "10.9.0.0/16", bus: { kind: "nats", servers: ["nats://a:4222"] } });
    const fromFlags = resolveCliConfig({ poolSize: "0", stateDir: "/tmp/b", instance: "flag", subnet: "10.8.0.0/16", bus: "embedded" }, env);
    expect(fromFlags).toMatchObject({ poolSize: 0, stateDir: "/tmp/b", instance: "flag", subnet: "10.8.0.0/16", bus: { kind: "embedded" } });
    // An empty variable counts as unset.
    expect(resolveCliConfig({}, { BURROW_POOL_SIZE: "" }).poolSize).toBe(DEFAULT_POOL_SIZE);
  });

  it("rejects a pool size that is not a non-negative integer, naming the flag or the variable", () => {
    expect(usageErrorOf(() => resolveCliConfig({ poolSize: "abc" }, {})).message).toBe("--pool-size must be a non-negative integer, got 'abc'");
    expect(usageErrorOf(() => resolveCliConfig({ poolSize: "-1" }, {})).message).toBe("--pool-size must be a non-negative integer, got '-1'");
    expect(usageErrorOf(() => resolveCliConfig({ poolSize: "2.5" }, {})).message).toBe("--pool-size must be a non-negative integer, got '2.5'");
    expect(usageErrorOf(() => resolveCliConfig({ poolSize: "" }, {})).message).toBe("--pool-size must be a non-negative integer, got ''");
    expect(usageErrorOf(() => resolveCliConfig({}, { BURROW_POOL_SIZE: "lots" })).message).toBe(
      "BURROW_POOL_SIZE must be a non-negative integer, got 'lots'",
    );
  });

  it("parses server flags for the server's resolver and leaves everything else to it", () => {
    // BURROW_PORT is the server's variable: the CLI passes it by, it does not read it.
    const config = resolveCliConfig({ port: "0", host: "0.0.0.0" }, { BURROW_PORT: "4000", BURROW_DOMAIN: "example.test" });
    expect(config.server).toEqual({ port: 0, host: "0.0.0.0" });
    expect(resolveCliConfig({}, { BURROW_PORT: "4000" }).server).toEqual({});
    const resolved = server.resolveServerConfig({ ...config.server, stateDir: config.stateDir }, { BURROW_PORT: "4000", BURROW_DOMAIN: "example.test" });
    expect(resolved).toMatchObject({ port: 0, host: "0.0.0.0", domain: "example.test" });
    expect(usageErrorOf(() => resolveCliConfig({ port: "http" }, {})).message).toBe("--port must be a non-negative integer, got 'http'");
    expect(usageErrorOf(() => resolveCliConfig({ port: "65536" }, {})).message).toBe("--port must be at most 65535, got '65536'");
  });

  it("validates the bus and the log level", () => {
    expect(resolveCliConfig({ bus: "nats://a:4222, tls://b:4222" }, {}).bus).toEqual({ kind: "nats", servers: ["nats://a:4222", "tls://b:4222"] });
    expect(usageErrorOf(() => resolveCliConfig({ bus: "redis://x" }, {})).message).toMatch(/^--bus must be 'embedded' or nats:\/\/ URLs/);
    expect(usageErrorOf(() => resolveCliConfig({}, { BURROW_BUS: "nats://" })).message).toMatch(/^BURROW_BUS must be/);
    expect(resolveCliConfig({}, { BURROW_LOG_LEVEL: "debug" }).logLevel).toBe("debug");
    expect(usageErrorOf(() => resolveCliConfig({}, { BURROW_LOG_LEVEL: "loud" })).message).toMatch(/^BURROW_LOG_LEVEL must be one of fatal, error/);
  });

  it("reads the client connection from the SDK's variables, and makes the state dir absolute", () => {
    const config = resolveCliConfig({ stateDir: "relative/state" }, { E2B_API_URL: "http://10.0.0.1:3000", E2B_API_KEY: "e2b_x" });
    expect(config).toMatchObject({ apiUrl: "http://10.0.0.1:3000", sandboxUrl: "http://10.0.0.1:3000", apiKey: "e2b_x" });
    expect(config.stateDir).toBe(`${process.cwd()}/relative/state`);
    expect(resolveCliConfig({}, { E2B_API_URL: "http://a", E2B_SANDBOX_URL: "http://b" }).sandboxUrl).toBe("http://b");
  });

  it("returns a frozen object", () => {
    const config = resolveCliConfig({ port: "1" }, { BURROW_BUS: "nats://a:1" });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.server)).toBe(true);
    expect(Object.isFrozen(config.bus)).toBe(true);
    expect(() => ((config as { poolSize: number }).poolSize = 9)).toThrow(TypeError);
  });
});
