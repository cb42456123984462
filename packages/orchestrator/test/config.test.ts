// The orchestrator's configuration resolver: input over the environment it is given over named defaults, bad
// values refused with an InvalidArgument error naming the field or variable, and process.env never read.
import { Code } from "@burrow/protocol";
import { describe, expect, it } from "vitest";
import {
  DEFAULT_LIMITS,
  DEFAULT_MEMORY_PAUSE_MAX_AGE_MS,
  DEFAULT_POOL_SHELLS,
  DEFAULT_POOL_SIZE,
  DEFAULT_UPLOAD_LIMITS,
  DEFAULT_USERNS_OWNERS,
  resolveOrchestratorConfig,
} from "../src/config.js";

/** What a refusal looks like: InvalidArgument, reason invalid_config, and the message (which names the setting). */
const configError = (message: string) => expect.objectContaining({ message, code: Code.InvalidArgument, reason: "invalid_config" });

/** Every variable the resolver reads, set to a valid value. */
const FULL_ENV = {
  BURROW_STATE_DIR: "/srv/burrow",
  BURROW_INSTANCE: "env",
  BURROW_SUBNET: "10.9.0.0/16",
  BURROW_POOL_SIZE: "5",
  BURROW_POOL_SHELLS: "3",
  BURROW_POOL_SIZES: "code-interpreter-v1=2, desktop=0",
  BURROW_IMAGE_DIR: "/srv/images",
  BURROW_REGISTRY_MIRRORS: "docker.io=http://127.0.0.1:5000,docker.io=https://m2.example/",
  BURROW_INSECURE_REGISTRIES: "127.0.0.1:5000, registry.lan",
  BURROW_PUBLIC_REGISTRIES: "false",
  BURROW_UPLOAD_MAX_BYTES: "1048576",
  BURROW_MEMORY_PAUSE_MAX_AGE_MS: "60000",
};

describe("resolveOrchestratorConfig", () => {
  it("applies the named defaults when neither input nor environment say anything", () => {
    const config = resolveOrchestratorConfig({}, {});
    expect(config).toEqual({
      stateDir: "/var/lib/burrow",
      cacheDir: "/var/cache/burrow",
      instance: "main",
      subnet: "10.213.0.0/16",
      uidBase: 100_000,
      uidCount: 65_536,
      usernsOwners: DEFAULT_USERNS_OWNERS,
      uidRangesBase: 0x7001_0000,
      pool: { template: "base", size: DEFAULT_POOL_SIZE, sizes: {}, shells: DEFAULT_POOL_SHELLS },
      defaultLimits: DEFAULT_LIMITS,
      envdReadyTimeoutMs: 15_000,
      noNewPrivileges: false,
      storage: "btrfs",
      imageImportDir: undefined,
      registries: { insecure: [], mirrors: {}, allowPublic: true },
      uploads: DEFAULT_UPLOAD_LIMITS,
      memoryPauseMaxAgeMs: DEFAULT_MEMORY_PAUSE_MAX_AGE_MS,
      hostServices: [],
      dnsUpstream: undefined,
      egressLimits: {},
      egressRelay: "native",
    });
    expect(DEFAULT_POOL_SIZE).toBe(2);
    expect(DEFAULT_MEMORY_PAUSE_MAX_AGE_MS).toBe(3_600_000);
  });

  it("reads the resolver's upstream and the host services, and refuses a malformed host service", () => {
    const config = resolveOrchestratorConfig({}, { BURROW_DNS_UPSTREAM: "192.0.2.53:5353", BURROW_HOST_SERVICES: "models.burrow=8123, svc.burrow=9000" });
    expect(config.dnsUpstream).toBe("192.0.2.53:5353");
    expect(config.hostServices).toEqual([{ name: "models.burrow", hostPort: 8123 }, { name: "svc.burrow", hostPort: 9000 }]);
    expect(() => resolveOrchestratorConfig({}, { BURROW_HOST_SERVICES: "models.burrow" })).toThrow(/BURROW_HOST_SERVICES/);
    expect(() => resolveOrchestratorConfig({}, { BURROW_HOST_SERVICES: "a=0" })).toThrow(/BURROW_HOST_SERVICES \(a\)/);
  });

  it("reads the egress limits (off by default and at 0), the input winning, and refuses a malformed one naming it", () => {
    const config = resolveOrchestratorConfig({}, { BURROW_EGRESS_CONN_PER_SEC: "20", BURROW_EGRESS_BYTES_PER_SEC: "1048576" });
    expect(config.egressLimits).toEqual({ connectionsPerSecond: 20, bytesPerSecond: 1048576 });
    expect(resolveOrchestratorConfig({}, { BURROW_EGRESS_CONN_PER_SEC: "0" }).egressLimits).toEqual({});
    expect(resolveOrchestratorConfig({ egressLimits: { bytesPerSecond: 5 } }, { BURROW_EGRESS_BYTES_PER_SEC: "9" }).egressLimits).toEqual({ bytesPerSecond: 5 });
    expect(resolveOrchestratorConfig(config).egressLimits).toEqual(config.egressLimits);
    expect(() => resolveOrchestratorConfig({}, { BURROW_EGRESS_BYTES_PER_SEC: "1M" })).toThrow(/BURROW_EGRESS_BYTES_PER_SEC/);
    expect(() => resolveOrchestratorConfig({ egressLimits: { connectionsPerSecond: 2.5 } })).toThrow(/egressLimits.connectionsPerSecond/);
  });

  it("reads the egress relay once (native by default), the input winning, and refuses an unknown kind naming it", () => {
    expect(resolveOrchestratorConfig({}, { BURROW_EGRESS_RELAY: "js" }).egressRelay).toBe("js");
    expect(resolveOrchestratorConfig({ egressRelay: "native" }, { BURROW_EGRESS_RELAY: "js" }).egressRelay).toBe("native");
    expect(resolveOrchestratorConfig(resolveOrchestratorConfig({}, { BURROW_EGRESS_RELAY: "js" })).egressRelay).toBe("js");
    expect(() => resolveOrchestratorConfig({}, { BURROW_EGRESS_RELAY: "kernel" })).toThrow(/BURROW_EGRESS_RELAY 'kernel'/);
  });

  it("reads the documented variables", () => {
    expect(resolveOrchestratorConfig({}, FULL_ENV)).toMatchObject({
      stateDir: "/srv/burrow",
      instance: "env",
      subnet: "10.9.0.0/16",
      pool: { template: "base", size: 5, sizes: { "code-interpreter-v1": 2, desktop: 0 }, shells: 3 },
      imageImportDir: "/srv/images",
      registries: {
        insecure: ["127.0.0.1:5000", "registry.lan"],
        mirrors: { "docker.io": ["http://127.0.0.1:5000", "https://m2.example"] },
        allowPublic: false,
      },
      uploads: { ...DEFAULT_UPLOAD_LIMITS, maxBytes: 1_048_576 },
      memoryPauseMaxAgeMs: 60_000,
    });
  });

  it("takes input over the variables, and a variable set but empty as unset", () => {
    const input = {
      stateDir: "/tmp/b",
      instance: "flag",
      subnet: "10.8.0.0/24",
      pool: { size: 0, sizes: { desktop: 1 } },
      imageImportDir: "/tmp/images",
      registries: { insecure: [], mirrors: {}, allowPublic: true },
      uploads: { maxBytes: 10 },
      memoryPauseMaxAgeMs: 5,
    };
    expect(resolveOrchestratorConfig(input, FULL_ENV)).toMatchObject({
      stateDir: "/tmp/b",
      instance: "flag",
      subnet: "10.8.0.0/24",
      pool: { template: "base", size: 0, sizes: { desktop: 1 }, shells: 3 },
      imageImportDir: "/tmp/images",
      registries: { insecure: [], mirrors: {}, allowPublic: true },
      uploads: { maxBytes: 10 },
      memoryPauseMaxAgeMs: 5,
    });
    const empty = Object.fromEntries(Object.keys(FULL_ENV).map((name) => [name, ""]));
    expect(resolveOrchestratorConfig({}, empty)).toEqual(resolveOrchestratorConfig({}, {}));
  });

  it("keeps prepared sandboxes while there is a pool, none without one unless asked for", () => {
    expect(resolveOrchestratorConfig({ pool: { size: 3 } }).pool.shells).toBe(DEFAULT_POOL_SHELLS);
    expect(resolveOrchestratorConfig({ pool: { size: 0 } }).pool.shells).toBe(0);
    expect(resolveOrchestratorConfig({ pool: { size: 0, shells: 4 } }).pool.shells).toBe(4);
    expect(resolveOrchestratorConfig({}, { BURROW_POOL_SIZE: "0" }).pool.shells).toBe(0);
  });

  it("reads only the environment it is given, never process.env", () => {
    const saved = process.env["BURROW_POOL_SIZE"];
    process.env["BURROW_POOL_SIZE"] = "7";
    try {
      expect(resolveOrchestratorConfig({}).pool.size).toBe(DEFAULT_POOL_SIZE);
      expect(resolveOrchestratorConfig({}, process.env).pool.size).toBe(7);
    } finally {
      if (saved === undefined) delete process.env["BURROW_POOL_SIZE"];
      else process.env["BURROW_POOL_SIZE"] = saved;
    }
  });

  it("returns a frozen config that resolves to itself without the environment", () => {
    const config = resolveOrchestratorConfig({ stateDir: "relative/state" }, FULL_ENV);
    expect(config.stateDir).toBe(`${process.cwd()}/relative/state`);
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.pool)).toBe(true);
    expect(Object.isFrozen(config.pool.sizes)).toBe(true);
    expect(Object.isFrozen(config.uploads)).toBe(true);
    // LocalOrchestrator.create resolves what it is given again, with no environment: the entry's choices stay.
    expect(resolveOrchestratorConfig(config)).toEqual(config);
    const defaults = resolveOrchestratorConfig({}, {});
    expect(resolveOrchestratorConfig(defaults, FULL_ENV)).toEqual(defaults);
  });

  it("refuses bad variables with an InvalidArgument error that names the variable", () => {
    for (const [env, message] of [
      [{ BURROW_INSTANCE: "Main-1" }, "BURROW_INSTANCE 'Main-1' must be 1-8 characters of [a-z0-9] (it is part of interface names)"],
      [{ BURROW_SUBNET: "10.0.0.0" }, "BURROW_SUBNET must be an IPv4 CIDR (a.b.c.d/n), got '10.0.0.0'"],
      [{ BURROW_SUBNET: "10.0.0.0/8" }, "BURROW_SUBNET must be a prefix from /12 to /30, got '10.0.0.0/8'"],
      [{ BURROW_SUBNET: "10.0.0.0/31" }, "BURROW_SUBNET must be a prefix from /12 to /30, got '10.0.0.0/31'"],
      [{ BURROW_STATE_DIR: " " }, "BURROW_STATE_DIR must not be empty"],
      [{ BURROW_POOL_SIZE: "1.5" }, "BURROW_POOL_SIZE must be a non-negative integer, got '1.5'"],
      [{ BURROW_POOL_SIZE: "-1" }, "BURROW_POOL_SIZE must be a non-negative integer, got '-1'"],
      [{ BURROW_POOL_SHELLS: "x" }, "BURROW_POOL_SHELLS must be a non-negative integer, got 'x'"],
      [{ BURROW_POOL_SIZES: "desktop" }, "BURROW_POOL_SIZES must be template=N pairs separated by commas, got 'desktop'"],
      [{ BURROW_POOL_SIZES: "desktop=x" }, "BURROW_POOL_SIZES (desktop) must be a non-negative integer, got 'x'"],
      [{ BURROW_UPLOAD_MAX_BYTES: "1e9" }, "BURROW_UPLOAD_MAX_BYTES must be a positive integer, got '1e9'"],
      [{ BURROW_UPLOAD_MAX_BYTES: "0" }, "BURROW_UPLOAD_MAX_BYTES must be a positive integer, got '0'"],
      [{ BURROW_MEMORY_PAUSE_MAX_AGE_MS: "1h" }, "BURROW_MEMORY_PAUSE_MAX_AGE_MS must be a positive integer, got '1h'"],
      [{ BURROW_MEMORY_PAUSE_MAX_AGE_MS: "0" }, "BURROW_MEMORY_PAUSE_MAX_AGE_MS must be a positive integer, got '0'"],
      [{ BURROW_PUBLIC_REGISTRIES: "maybe" }, "BURROW_PUBLIC_REGISTRIES must be true or false, got 'maybe'"],
      [{ BURROW_REGISTRY_MIRRORS: "docker.io" }, "BURROW_REGISTRY_MIRRORS entry 'docker.io' must look like docker.io=https://mirror.example"],
    ] as const) {
      expect(() => resolveOrchestratorConfig({}, env)).toThrow(configError(message));
    }
  });

  it("refuses bad input naming the field, whatever the variables say", () => {
    expect(() => resolveOrchestratorConfig({ instance: "x".repeat(9) }, { BURROW_INSTANCE: "ok" })).toThrow(/^instance 'x{9}' must be/);
    for (const [input, message] of [
      [{ pool: { size: -1 } }, "pool.size must be a non-negative integer, got -1"],
      [{ pool: { sizes: { desktop: 0.5 } } }, "pool.sizes.desktop must be a non-negative integer, got 0.5"],
      [{ uploads: { maxCount: 0 } }, "uploads.maxCount must be a positive integer, got 0"],
      [{ memoryPauseMaxAgeMs: 0 }, "memoryPauseMaxAgeMs must be a positive integer, got 0"],
      [{ subnet: "300.0.0.0/16" }, "subnet must be an IPv4 CIDR (a.b.c.d/n), got '300.0.0.0/16'"],
    ] as const) {
      expect(() => resolveOrchestratorConfig(input, { BURROW_POOL_SIZE: "1", BURROW_SUBNET: "10.9.0.0/16" })).toThrow(configError(message));
    }
    expect(() => resolveOrchestratorConfig({ uidRangesBase: 100_000 })).toThrow(/^uidRangesBase 100000: /);
  });
});
