// The CLI's configuration: each process resolves its settings once, from its flags and the environment its entry
// point read. Client commands use resolveCliConfig; `burrow up` resolveUpConfig, which hands the parsed flags to
// the orchestrator's and the server's own resolvers (flag over variable over default, usage errors that name them).
import { describe, expect, it } from "vitest";
import * as orchestrator from "@burrow/orchestrator";
import * as server from "@burrow/server";
import { CliError } from "../src/cli-error.js";
import { DEFAULT_BUS, DEFAULT_INSTANCE, DEFAULT_POOL_SHELLS, DEFAULT_POOL_SIZE, DEFAULT_STATE_DIR, DEFAULT_SUBNET, resolveCliConfig } from "../src/config.js";
import { resolveDownConfig, resolveUpConfig } from "../src/up-config.js";

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

describe("defaults in --help", () => {
  it("are the ones the orchestrator and the server apply", () => {
    const resolved = resolveUpConfig({}, {});
    expect(resolved.orchestrator).toMatchObject({ stateDir: DEFAULT_STATE_DIR, instance: DEFAULT_INSTANCE, subnet: DEFAULT_SUBNET });
    expect(resolved.orchestrator.pool.size).toBe(DEFAULT_POOL_SIZE);
    expect(resolved.orchestrator.pool.shells).toBe(DEFAULT_POOL_SHELLS);
    expect(DEFAULT_POOL_SHELLS).toBe(orchestrator.DEFAULT_POOL_SHELLS);
    expect(resolveUpConfig({ poolShells: "5" }, {}).orchestrator.pool.shells).toBe(5);
    expect(resolved.bus).toEqual({ kind: DEFAULT_BUS });
    expect(DEFAULT_STATE_DIR).toBe(orchestrator.DEFAULT_STATE_DIR);
    expect(DEFAULT_STATE_DIR).toBe(server.DEFAULT_STATE_DIR);
    expect(DEFAULT_SUBNET).toBe(orchestrator.DEFAULT_SUBNET);
  });
});

describe("resolveCliConfig", () => {
  it("applies the named defaults when neither flags nor environment say anything", () => {
    expect(resolveCliConfig({}, {})).toEqual({
      stateDir: "/var/lib/burrow",
      apiUrl: "http://localhost:3000",
      sandboxUrl: "http://localhost:3000",
      apiKey: null,
    });
  });

  it("reads the client connection from the SDK's variables, the state dir flag over its variable, made absolute", () => {
    const config = resolveCliConfig({ stateDir: "relative/state" }, { E2B_API_URL: "http://10.0.0.1:3000", E2B_API_KEY: "e2b_x", BURROW_STATE_DIR: "/srv/b" });
    expect(config).toMatchObject({ apiUrl: "http://10.0.0.1:3000", sandboxUrl: "http://10.0.0.1:3000", apiKey: "e2b_x" });
    expect(config.stateDir).toBe(`${process.cwd()}/relative/state`);
    expect(resolveCliConfig({}, { BURROW_STATE_DIR: "/srv/b" }).stateDir).toBe("/srv/b");
    expect(resolveCliConfig({}, { E2B_API_URL: "http://a", E2B_SANDBOX_URL: "http://b" }).sandboxUrl).toBe("http://b");
    // An empty variable counts as unset.
    expect(resolveCliConfig({}, { BURROW_STATE_DIR: "", E2B_API_KEY: "" })).toEqual(resolveCliConfig({}, {}));
    expect(usageErrorOf(() => resolveCliConfig({ stateDir: "" }, {})).message).toBe("--state-dir must not be empty");
  });

  it("returns a frozen object and reads nothing but the environment it is given", () => {
    const config = resolveCliConfig({}, {});
    expect(Object.isFrozen(config)).toBe(true);
    const saved = process.env["E2B_API_URL"];
    process.env["E2B_API_URL"] = "http://from-process-env";
    try {
      expect(resolveCliConfig({}, {}).apiUrl).toBe("http://localhost:3000");
    } finally {
      if (saved === undefined) delete process.env["E2B_API_URL"];
      else process.env["E2B_API_URL"] = saved;
    }
  });
});

describe("resolveUpConfig", () => {
  it("resolves the orchestrator's and the server's settings with their defaults", () => {
    const config = resolveUpConfig({}, {});
    expect(config.orchestrator).toEqual(orchestrator.resolveOrchestratorConfig({}, {}));
    expect(config.server).toEqual(server.resolveServerConfig({}, {}));
    expect(config).toMatchObject({ bus: { kind: "embedded" }, logLevel: "info" });
  });

  it("leaves every variable to its resolver: the orchestrator's, the server's, the CLI's own", () => {
    const env = {
      BURROW_STATE_DIR: "/srv/burrow",
      BURROW_INSTANCE: "env",
      BURROW_SUBNET: "10.9.0.0/16",
      BURROW_POOL_SIZE: "5",
      BURROW_POOL_SIZES: "desktop=0",
      BURROW_IMAGE_DIR: "/srv/images",
      BURROW_UPLOAD_MAX_BYTES: "4096",
      BURROW_PUBLIC_REGISTRIES: "false",
      BURROW_PORT: "4000",
      BURROW_HOST: "0.0.0.0",
      BURROW_DOMAIN: "example.test",
      BURROW_API_KEY: "e2b_env",
      BURROW_MAX_SANDBOXES: "9",
      BURROW_FS_EVENTS_PER_SEC: "11",
      BURROW_BUS: "nats://a:4222, tls://b:4222",
      BURROW_LOG_LEVEL: "debug",
    };
    const config = resolveUpConfig({}, env);
    expect(config.orchestrator).toMatchObject({
      stateDir: "/srv/burrow",
      instance: "env",
      subnet: "10.9.0.0/16",
      pool: { size: 5, sizes: { desktop: 0 } },
      imageImportDir: "/srv/images",
      uploads: { maxBytes: 4096 },
      registries: { allowPublic: false },
    });
    // The server shares the orchestrator's state directory.
    expect(config.server).toMatchObject({ stateDir: "/srv/burrow", port: 4000, host: "0.0.0.0", domain: "example.test", apiKey: "e2b_env" });
    expect(config.server.admission.maxSandboxes).toBe(9);
    expect(config.server.fsEvents.perSecond).toBe(11);
    expect(config).toMatchObject({ bus: { kind: "nats", servers: ["nats://a:4222", "tls://b:4222"] }, logLevel: "debug" });
  });

  it("takes a flag over its variable", () => {
    const env = { BURROW_STATE_DIR: "/srv/burrow", BURROW_INSTANCE: "env", BURROW_SUBNET: "10.9.0.0/16", BURROW_POOL_SIZE: "5", BURROW_POOL_SIZES: "desktop=0", BURROW_PORT: "4000", BURROW_HOST: "0.0.0.0", BURROW_DOMAIN: "example.test", BURROW_BUS: "nats://a:4222" };
    const config = resolveUpConfig(
      { stateDir: "/tmp/b", instance: "flag", subnet: "10.8.0.0/16", poolSize: "0", poolSizes: "desktop=3, code-interpreter-v1=1", port: "0", host: "127.0.0.1", domain: "flag.test", bus: "embedded" },
      env,
    );
    expect(config.orchestrator).toMatchObject({ stateDir: "/tmp/b", instance: "flag", subnet: "10.8.0.0/16", pool: { size: 0, sizes: { desktop: 3, "code-interpreter-v1": 1 } } });
    expect(config.server).toMatchObject({ stateDir: "/tmp/b", port: 0, host: "127.0.0.1", domain: "flag.test" });
    expect(config.bus).toEqual({ kind: "embedded" });
    const ages = (flags: { memoryPauseMaxAgeMs?: string }) => resolveUpConfig(flags, { BURROW_MEMORY_PAUSE_MAX_AGE_MS: "60000" }).orchestrator.memoryPauseMaxAgeMs;
    expect([ages({}), ages({ memoryPauseMaxAgeMs: "5000" })]).toEqual([60_000, 5_000]);
  });

  it("gives a node of a cluster the cluster's NATS as its bus unless --bus or BURROW_BUS says otherwise", () => {
    const servers = ["nats://a:4222", "nats://b:4222"];
    expect(resolveUpConfig({ cluster: servers.join(","), nodeName: "n1" }, {}).bus).toEqual({ kind: "nats", servers });
    expect(resolveUpConfig({ nodeName: "n1" }, { BURROW_CLUSTER: servers.join(",") }).bus).toEqual({ kind: "nats", servers });
    expect(resolveUpConfig({ cluster: servers.join(","), nodeName: "n1", bus: "embedded" }, {}).bus).toEqual({ kind: "embedded" });
    expect(resolveUpConfig({ cluster: servers.join(","), nodeName: "n1" }, { BURROW_BUS: "embedded" }).bus).toEqual({ kind: "embedded" });
    expect(resolveUpConfig({ cluster: servers.join(","), nodeName: "n1", bus: "nats://c:4222" }, {}).bus).toEqual({ kind: "nats", servers: ["nats://c:4222"] });
    expect(resolveUpConfig({}, {}).bus).toEqual({ kind: "embedded" });
  });

  it("gives a node of a cluster its move limit from --cluster-move-max-mb over BURROW_CLUSTER_MOVE_MAX_MB over 10240", () => {
    const env = { BURROW_CLUSTER: "nats://a:4222" };
    expect(resolveUpConfig({ nodeName: "n1" }, env).server.cluster?.moveMaxMB).toBe(10_240);
    expect(resolveUpConfig({ nodeName: "n1" }, { ...env, BURROW_CLUSTER_MOVE_MAX_MB: "64" }).server.cluster?.moveMaxMB).toBe(64);
    expect(resolveUpConfig({ nodeName: "n1", clusterMoveMaxMb: "32" }, { ...env, BURROW_CLUSTER_MOVE_MAX_MB: "64" }).server.cluster?.moveMaxMB).toBe(32);
    expect(() => resolveUpConfig({ nodeName: "n1", clusterMoveMaxMb: "0" }, env)).toThrow(/--cluster-move-max-mb/);
  });

  it("refuses bad flags and variables with usage errors that name them", () => {
    for (const [flags, env, message] of [
      [{ poolSize: "abc" }, {}, "--pool-size must be a non-negative integer, got 'abc'"],
      [{ poolSize: "2.5" }, {}, "--pool-size must be a non-negative integer, got '2.5'"],
      [{ poolSize: "" }, {}, "--pool-size must be a non-negative integer, got ''"],
      [{}, { BURROW_POOL_SIZE: "lots" }, "BURROW_POOL_SIZE must be a non-negative integer, got 'lots'"],
      [{ poolSizes: "desktop" }, {}, "--pool-sizes must be template=N pairs separated by commas, got 'desktop'"],
      [{ poolSizes: "desktop=-1" }, {}, "--pool-sizes (desktop) must be a non-negative integer, got '-1'"],
      [{}, { BURROW_POOL_SIZES: "desktop=x" }, "BURROW_POOL_SIZES (desktop) must be a non-negative integer, got 'x'"],
      [{ memoryPauseMaxAgeMs: "0" }, {}, "--memory-pause-max-age-ms must be a positive integer, got '0'"],
      [{}, { BURROW_MEMORY_PAUSE_MAX_AGE_MS: "1h" }, "BURROW_MEMORY_PAUSE_MAX_AGE_MS must be a positive integer, got '1h'"],
      [{ port: "http" }, {}, "--port must be a non-negative integer, got 'http'"],
      [{ port: "65536" }, {}, "--port must be at most 65535, got '65536'"],
      [{}, { BURROW_PORT: "http" }, "BURROW_PORT must be a non-negative integer, got 'http'"],
      [{ stateDir: "" }, {}, "--state-dir must not be empty"],
      [{ subnet: "10.0.0.0" }, {}, "subnet must be an IPv4 CIDR (a.b.c.d/n), got '10.0.0.0'"],
      [{}, { BURROW_SUBNET: "10.0.0.0/8" }, "BURROW_SUBNET must be a prefix from /12 to /30, got '10.0.0.0/8'"],
      [{}, { BURROW_INSTANCE: "Main" }, "BURROW_INSTANCE 'Main' must be 1-8 characters of [a-z0-9] (it is part of interface names)"],
      [{}, { BURROW_UPLOAD_MAX_BYTES: "big" }, "BURROW_UPLOAD_MAX_BYTES must be a positive integer, got 'big'"],
      [{}, { BURROW_TLS: "maybe" }, "BURROW_TLS must be true or false, got 'maybe'"],
      [{}, { BURROW_MAX_SANDBOXES: "0" }, "BURROW_MAX_SANDBOXES must be a positive integer, got '0'"],
      [{ bus: "redis://x" }, {}, "--bus must be 'embedded' or nats:// URLs (comma-separated), got 'redis://x'"],
      [{}, { BURROW_BUS: "nats://" }, "BURROW_BUS must be 'embedded' or nats:// URLs (comma-separated), got 'nats://'"],
      [{}, { BURROW_LOG_LEVEL: "loud" }, "BURROW_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got 'loud'"],
    ] as const) {
      expect(usageErrorOf(() => resolveUpConfig(flags, env)).message).toBe(message);
    }
  });

  it("returns frozen objects", () => {
    const config = resolveUpConfig({ port: "1" }, { BURROW_BUS: "nats://a:1" });
    for (const part of [config, config.orchestrator, config.orchestrator.pool, config.server, config.bus]) expect(Object.isFrozen(part)).toBe(true);
  });
});

describe("resolveDownConfig", () => {
  it("resolves the instance as up does, without a pool", () => {
    const env = { BURROW_STATE_DIR: "/srv/burrow", BURROW_INSTANCE: "env", BURROW_SUBNET: "10.9.0.0/16", BURROW_POOL_SIZE: "5" };
    expect(resolveDownConfig({}, env)).toMatchObject({ stateDir: "/srv/burrow", instance: "env", subnet: "10.9.0.0/16", pool: { size: 0 } });
    expect(resolveDownConfig({ instance: "flag" }, env).instance).toBe("flag");
    expect(usageErrorOf(() => resolveDownConfig({ instance: "Bad!" }, {})).message).toMatch(/^instance 'Bad!' must be 1-8 characters/);
  });
});
