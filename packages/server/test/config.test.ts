import { describe, expect, it } from "vitest";
import { DEFAULT_HOST, DEFAULT_PORT, resolveServerConfig } from "../src/config.js";

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

  it("reads BURROW_TLS as a boolean", () => {
    expect(resolveServerConfig({}, { BURROW_TLS: "false" }).tls).toBe(false);
    expect(resolveServerConfig({}, { BURROW_TLS: "1" }).tls).toBe(true);
    expect(resolveServerConfig({ tls: true }, { BURROW_TLS: "off" }).tls).toBe(true);
    expect(() => resolveServerConfig({}, { BURROW_TLS: "maybe" })).toThrow(/BURROW_TLS must be true or false, got 'maybe'/);
  });

  it("rejects nonsense", () => {
    expect(() => resolveServerConfig({ port: 70_000 }, {})).toThrow(/port/);
    expect(() => resolveServerConfig({ port: -1 }, {})).toThrow(/port/);
    expect(() => resolveServerConfig({ defaultTimeoutSec: 10, maxTimeoutSec: 5 }, {})).toThrow(/exceeds/);
    expect(() => resolveServerConfig({}, { BURROW_PORT: "abc" })).toThrow(/port/);
    expect(() => resolveServerConfig({ apiKey: " " }, {})).toThrow(/apiKey/);
  });
});
