import { Code } from "@burrow/protocol";
import { describe, expect, it } from "vitest";
import { DEFAULT_HOST, DEFAULT_PORT, resolveServerConfig } from "../src/config.js";

/** What a refusal looks like: InvalidArgument, reason invalid_config, and the message (which names the setting). */
const configError = (message: string) => expect.objectContaining({ message, code: Code.InvalidArgument, reason: "invalid_config" });

describe("resolveServerConfig", () => {
  it("applies defaults and freezes", () => {
    const cfg = resolveServerConfig({}, {});
    expect(cfg).toMatchObject({
      host: DEFAULT_HOST,
      port: DEFAULT_PORT,
      stateDir: "/var/lib/burrow",
      domain: "auto",
      tls: true,
      defaultTimeoutSec: 300,
      maxTimeoutSec: 86_400,
      apiKey: null,
    });
    expect(Object.isFrozen(cfg)).toBe(true);
  });

  it("reads the documented env vars, explicit options win, null means none", () => {
    const env = { BURROW_PORT: "4000", BURROW_HOST: "0.0.0.0", BURROW_STATE_DIR: "/tmp/x", BURROW_DOMAIN: "example.com", BURROW_API_KEY: "k" };
    expect(resolveServerConfig({}, env)).toMatchObject({ port: 4000, host: "0.0.0.0", stateDir: "/tmp/x", domain: "example.com", apiKey: "k" });
    expect(resolveServerConfig({ port: 5, domain: null, apiKey: null }, env)).toMatchObject({ port: 5, domain: null, apiKey: null });
    // A resolved config resolves to itself.
    const cfg = resolveServerConfig({}, env);
    expect(resolveServerConfig(cfg, {})).toEqual(cfg);
  });

  it("resolves the bus event limits once, with the rest", () => {
    const env = { BURROW_FS_EVENT_WINDOW_MS: "50", BURROW_FS_EVENTS_PER_SEC: "10", BURROW_FS_EVENT_BURST: "20", BURROW_OUTPUT_EVENT_BYTES_PER_SEC: "1024" };
    const cfg = resolveServerConfig({ outputEvents: { burstBytes: 4096 } }, env);
    expect(cfg.fsEvents).toEqual({ windowMs: 50, perSecond: 10, burst: 20, maxPending: 4096 });
    expect(cfg.outputEvents).toEqual({ windowMs: 100, bytesPerSecond: 1024, burstBytes: 4096 });
    expect(Object.isFrozen(cfg.fsEvents) && Object.isFrozen(cfg.outputEvents)).toBe(true);
    expect(resolveServerConfig(cfg, {})).toEqual(cfg);
    expect(() => resolveServerConfig({}, { BURROW_FS_EVENT_BURST: "many" })).toThrow('BURROW_FS_EVENT_BURST ("many") must be a positive integer');
  });

  it("resolves the teams' default quotas from BURROW_TEAM_*, unlimited (0) when unset", () => {
    expect(resolveServerConfig({}, {}).teamQuotas.maxRunningSandboxes).toBe(0);
    const cfg = resolveServerConfig({ teamQuotas: { maxVcpu: 4 } }, { BURROW_TEAM_MAX_RUNNING_SANDBOXES: "3", BURROW_TEAM_MAX_VCPU: "8" });
    expect(cfg.teamQuotas).toMatchObject({ maxRunningSandboxes: 3, maxVcpu: 4, createsPerMinute: 0 });
    expect(resolveServerConfig(cfg, {})).toEqual(cfg);
    expect(() => resolveServerConfig({}, { BURROW_TEAM_CREATES_PER_MINUTE: "-1" })).toThrow(expect.objectContaining({ code: Code.InvalidArgument, message: expect.stringContaining("BURROW_TEAM_CREATES_PER_MINUTE") }));
  });

  it("resolves the sandbox event stream's limits from its environment, for the server and every trigger engine alike", () => {
    expect(resolveServerConfig({}, {}).eventStream).toEqual({ maxAgeMs: 86_400_000, maxBytes: 1024 ** 3 });
    const cfg = resolveServerConfig({ eventStream: { maxBytes: 7 } }, { BURROW_EVENT_STREAM_MAX_AGE_MS: "60000", BURROW_EVENT_STREAM_MAX_BYTES: "5000" });
    expect(cfg.eventStream).toEqual({ maxAgeMs: 60_000, maxBytes: 7 });
    expect(Object.isFrozen(cfg.eventStream)).toBe(true);
    expect(() => resolveServerConfig({}, { BURROW_EVENT_STREAM_MAX_BYTES: "1GB" })).toThrow('BURROW_EVENT_STREAM_MAX_BYTES ("1GB") must be a positive integer');
  });

  it("reads BURROW_TLS as a boolean", () => {
    expect(resolveServerConfig({}, { BURROW_TLS: "false" }).tls).toBe(false);
    expect(resolveServerConfig({}, { BURROW_TLS: "1" }).tls).toBe(true);
    expect(resolveServerConfig({ tls: true }, { BURROW_TLS: "off" }).tls).toBe(true);
    expect(() => resolveServerConfig({}, { BURROW_TLS: "maybe" })).toThrow(/BURROW_TLS must be true or false, got 'maybe'/);
  });

  it("reads only the environment it is given, never process.env", () => {
    const saved = { port: process.env["BURROW_PORT"], tls: process.env["BURROW_TLS"] };
    process.env["BURROW_PORT"] = "4321";
    process.env["BURROW_TLS"] = "false";
    try {
      expect(resolveServerConfig({})).toMatchObject({ port: DEFAULT_PORT, tls: true });
      expect(resolveServerConfig({}, process.env)).toMatchObject({ port: 4321, tls: false });
    } finally {
      for (const [name, value] of [["BURROW_PORT", saved.port], ["BURROW_TLS", saved.tls]] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  it("counts a set but empty variable as unset", () => {
    const env = { BURROW_PORT: "", BURROW_HOST: "", BURROW_STATE_DIR: "", BURROW_DOMAIN: "", BURROW_API_KEY: "", BURROW_TLS: "", BURROW_MAX_SANDBOXES: "" };
    expect(resolveServerConfig({}, env)).toEqual(resolveServerConfig({}, {}));
  });

  it("refuses a bad variable with an InvalidArgument error naming the variable and its text", () => {
    for (const [env, message] of [
      [{ BURROW_PORT: "abc" }, "BURROW_PORT must be a non-negative integer, got 'abc'"],
      [{ BURROW_PORT: "65536" }, "BURROW_PORT must be ≤ 65535, got '65536'"],
      [{ BURROW_PORT: " " }, "BURROW_PORT must be a non-negative integer, got ' '"],
      [{ BURROW_MEMORY_OVERCOMMIT: "lots" }, "BURROW_MEMORY_OVERCOMMIT must be a positive number, got 'lots'"],
      [{ BURROW_MIN_FREE_DISK_MB: "-1" }, "BURROW_MIN_FREE_DISK_MB must be a non-negative integer, got '-1'"],
      [{ BURROW_HEADERS_TIMEOUT_MS: "0" }, "BURROW_HEADERS_TIMEOUT_MS must be a positive integer, got '0'"],
      [{ BURROW_REQUEST_TIMEOUT_MS: "3000000000" }, "BURROW_REQUEST_TIMEOUT_MS must be ≤ 2147483647, got '3000000000'"],
    ] as const) {
      expect(() => resolveServerConfig({}, env)).toThrow(configError(message));
    }
    // A bad input value is named by its field; the variable it overrides does not matter.
    expect(() => resolveServerConfig({ port: 1.5 }, { BURROW_PORT: "80" })).toThrow(configError("port must be a non-negative integer, got 1.5"));
    expect(() => resolveServerConfig({ admission: { maxSandboxes: 0 } }, {})).toThrow(configError("admission.maxSandboxes must be a positive integer, got 0"));
  });

  it("rejects nonsense", () => {
    expect(() => resolveServerConfig({ port: 70_000 }, {})).toThrow(/port/);
    expect(() => resolveServerConfig({ port: -1 }, {})).toThrow(/port/);
    expect(() => resolveServerConfig({ defaultTimeoutSec: 10, maxTimeoutSec: 5 }, {})).toThrow(/exceeds/);
    expect(() => resolveServerConfig({ apiKey: " " }, {})).toThrow(/apiKey/);
  });
});
