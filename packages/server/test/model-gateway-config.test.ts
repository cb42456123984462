// The model gateway's listening address in the server's config: defaults, its variables, input over environment,
// and refusals that name the setting.
import { Code } from "@burrow/protocol";
import { describe, expect, it } from "vitest";
import { resolveServerConfig } from "../src/config.js";

describe("resolveServerConfig: modelGateway", () => {
  it("defaults to loopback and a free port, frozen", () => {
    const cfg = resolveServerConfig({}, {});
    expect(cfg.modelGateway).toEqual({ host: "127.0.0.1", port: 0 });
    expect(Object.isFrozen(cfg.modelGateway)).toBe(true);
  });

  it("reads BURROW_MODEL_GATEWAY_PORT and _HOST; input wins; a resolved config resolves to itself", () => {
    const env = { BURROW_MODEL_GATEWAY_PORT: "4100", BURROW_MODEL_GATEWAY_HOST: "10.0.0.1" };
    expect(resolveServerConfig({}, env).modelGateway).toEqual({ host: "10.0.0.1", port: 4100 });
    expect(resolveServerConfig({ modelGateway: { port: 4200 } }, env).modelGateway).toEqual({ host: "10.0.0.1", port: 4200 });
    expect(resolveServerConfig({}, { BURROW_MODEL_GATEWAY_PORT: "", BURROW_MODEL_GATEWAY_HOST: "" }).modelGateway).toEqual({ host: "127.0.0.1", port: 0 });
    const cfg = resolveServerConfig({}, env);
    expect(resolveServerConfig(cfg, {})).toEqual(cfg);
  });

  it("refuses a bad port with an InvalidArgument error naming the variable or field", () => {
    for (const [input, env, message] of [
      [{}, { BURROW_MODEL_GATEWAY_PORT: "http" }, "BURROW_MODEL_GATEWAY_PORT must be a non-negative integer, got 'http'"],
      [{}, { BURROW_MODEL_GATEWAY_PORT: "70000" }, "BURROW_MODEL_GATEWAY_PORT must be ≤ 65535, got '70000'"],
      [{ modelGateway: { port: -1 } }, {}, "modelGateway.port must be a non-negative integer, got -1"],
      [{ modelGateway: { host: " " } }, {}, "modelGateway.host must not be empty"],
    ] as const) {
      expect(() => resolveServerConfig(input, env)).toThrow(expect.objectContaining({ message, code: Code.InvalidArgument, reason: "invalid_config" }));
    }
  });
});
