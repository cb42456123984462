// network.rules as the API accepts them (header transforms): validation that names the bad host, header, value or
// placeholder; E2B's host matching (exact name first, else the longest wildcard, never merged; a wildcard never names
// its apex); the secrets the placeholders name; the proxying that sends a sandbox with rules (or a proxy) through the
// egress proxy, and what copies of a sandbox (snapshot and checkpoint children) inherit.
import { BurrowError, Code } from "@burrow/protocol";
import { describe, expect, it } from "vitest";
import { headersFor, inspectPortsOf, networkRules, requireRuleSecrets, secretNamesOf } from "../src/network/network-rules.js";
import { copiedNetwork, egressConfigOf, egressListsOf, egressOf, networkFromCreate, networkView, withInheritedEgress } from "../src/network/network-config.js";

const rule = (headers: Record<string, string>) => [{ transform: { headers } }];

function refusal(body: Record<string, unknown>): string {
  try {
    networkRules(body);
  } catch (err) {
    expect(err).toBeInstanceOf(BurrowError);
    expect((err as BurrowError).code).toBe(Code.InvalidArgument);
    return (err as Error).message;
  }
  throw new Error("accepted");
}

describe("network rules", () => {
  it("accepts E2B's shapes (a rule without transform, empty headers) and lower-cases hosts", () => {
    expect(networkRules({ "API.Example.com": rule({ Authorization: "Bearer ${e2b.secrets.OPENAI}" }), "*.x.test": [{}, { transform: {} }] })).toEqual({
      "api.example.com": rule({ Authorization: "Bearer ${e2b.secrets.OPENAI}" }),
      "*.x.test": [{}, { transform: {} }],
    });
    expect(networkRules({})).toBeUndefined();
    expect(networkRules(undefined)).toBeUndefined();
  });

  it("refuses bad hosts, header names, values and placeholders, naming them", () => {
    expect(refusal({ "*": rule({ A: "b" }) })).toMatch(/'\*'/);
    expect(refusal({ "10.0.0.1": rule({ A: "b" }) })).toMatch(/10\.0\.0\.1/);
    expect(refusal({ "a.test": rule({ "Bad Name": "b" }) })).toMatch(/Bad Name/);
    expect(refusal({ "a.test": rule({ "X-A": "b\r\nX-B: c" }) })).toMatch(/X-A/);
    expect(refusal({ "a.test": rule({ "Content-Length": "5" }) })).toMatch(/Content-Length/);
    expect(refusal({ "a.test": rule({ "X-A": "${e2b.identity.tokens.t}" }) })).toMatch(/e2b\.identity\.tokens\.t/);
    expect(refusal({ "a.test": [{ transform: { headers: { "X-A": 5 } } }] })).toMatch(/X-A/);
    expect(refusal({ "a.test": [{ transform: { body: {} } }] })).toMatch(/body/);
    expect(refusal({ "a.test": "x" })).toMatch(/a\.test/);
  });

  it("matches the exact host, else the longest wildcard below its apex, without merging", () => {
    const rules = networkRules({
      "*.example.com": rule({ "X-Which": "wide" }),
      "*.api.example.com": rule({ "X-Which": "narrow" }),
      "api.example.com": [{ transform: { headers: { "X-Which": "exact", "X-First": "1" } } }, { transform: { headers: { "X-Which": "exact-2" } } }],
    });
    expect(headersFor(rules, "api.example.com", 443)).toEqual({ "X-Which": "exact-2", "X-First": "1" });
    expect(headersFor(rules, "v1.api.example.com", 443)).toEqual({ "X-Which": "narrow" });
    expect(headersFor(rules, "a.b.example.com", 443)).toEqual({ "X-Which": "wide" });
    expect(headersFor(rules, "example.com", 443)).toBeUndefined();
    expect(headersFor(rules, "API.EXAMPLE.COM.", 443)).toEqual({ "X-Which": "exact-2", "X-First": "1" });
  });

  it("a key with a port applies only to that port and the proxy takes it; a key without one applies to 80 and 443", () => {
    const rules = networkRules({
      "API.example.com:8443": rule({ "X-Which": "exact-8443" }),
      "*.example.com:8443": rule({ "X-Which": "wide-8443" }),
      "api.example.com:443": rule({ "X-Which": "exact-443" }),
      "api.example.com": rule({ "X-Which": "web" }),
    });
    expect(Object.keys(rules!)).toEqual(["api.example.com:8443", "*.example.com:8443", "api.example.com:443", "api.example.com"]);
    expect(headersFor(rules, "api.example.com", 8443)).toEqual({ "X-Which": "exact-8443" });
    expect(headersFor(rules, "v1.example.com", 8443)).toEqual({ "X-Which": "wide-8443" });
    expect(headersFor(rules, "api.example.com", 443)).toEqual({ "X-Which": "exact-443" });
    expect(headersFor(rules, "api.example.com", 80)).toEqual({ "X-Which": "web" });
    expect(headersFor(rules, "api.example.com", 9443)).toBeUndefined();
    expect(headersFor(rules, "v1.example.com", 443)).toBeUndefined();
    expect(inspectPortsOf(rules)).toEqual([8443]);
    const config = networkFromCreate({ rules: { "a.test:9000": rule({ A: "b" }), "b.test:8443": rule({ A: "b" }), "c.test:80": rule({ A: "b" }) } })!;
    expect(egressListsOf(config)).toEqual({ allowOut: [], denyOut: [], proxied: "inspect", inspectPorts: [8443, 9000] });
    expect(egressOf(config, true)).toMatchObject({ proxied: "inspect", inspectPorts: [8443, 9000] });
  });

  it("refuses a bad port in a key, naming the key", () => {
    for (const key of ["a.test:0", "a.test:65536", "a.test:08443", "a.test:", "a.test:+1", "a.test:53", "a.test:1:2", "10.0.0.1:80"]) {
      expect(refusal({ [key]: rule({ A: "b" }) }), key).toContain(`'${key}'`);
    }
  });

  it("names the secrets the placeholders name, and refuses a missing one by name", () => {
    const rules = networkRules({ "a.test": rule({ A: "${e2b.secrets.one} and ${e2b.secrets.two}" }), "b.test": rule({ B: "${e2b.secrets.one}" }) })!;
    expect(secretNamesOf(rules).sort()).toEqual(["one", "two"]);
    expect(() => requireRuleSecrets(rules, (n) => n === "one")).toThrow(/'two'/);
    expect(() => requireRuleSecrets(rules, () => true)).not.toThrow();
  });

  it("a config with rules reaches the orchestrator proxied 'inspect', one with a proxy 'tunnel', with its lists as written", () => {
    const config = networkFromCreate({ rules: { "a.test": rule({ A: "b" }) } })!;
    expect(egressListsOf(config)).toEqual({ allowOut: [], denyOut: [], proxied: "inspect" });
    expect(networkView(config)).toEqual({ allowOut: [], denyOut: [], allowPublicTraffic: true, rules: { "a.test": rule({ A: "b" }) } });
    expect(egressListsOf(networkFromCreate({ denyOut: ["1.2.3.4"] }))).toEqual({ allowOut: [], denyOut: ["1.2.3.4"], proxied: "none" });
    const tunneled = networkFromCreate({ denyOut: ["x.test"], rules: { "a.test": rule({ A: "b" }) }, egressProxy: { address: "socks5://192.0.2.1:1080" } })!;
    expect(egressOf(tunneled, false)).toEqual({ allowInternetAccess: false, allowOut: [], denyOut: ["x.test"], proxied: "tunnel" });
    expect(egressOf(undefined, true)).toEqual({ allowInternetAccess: true, allowOut: [], denyOut: [], proxied: "none" });
  });

  it("copies carry the egress whole: a fork its source's, a snapshot's create the one kept with it unless it sets its own", () => {
    const source = networkFromCreate({ allowPublicTraffic: false, rules: { "a.test": rule({ A: "b" }) }, egressProxy: { address: "192.0.2.1:1080", username: "u", password: "p" } })!;
    source.rulesOwner = 7;
    const fork = copiedNetwork(source)!;
    expect(fork).toMatchObject({ rules: source.rules, rulesOwner: 7, egressProxy: source.egressProxy, allowPublicTraffic: false });
    expect(fork.trafficAccessToken).not.toBe(source.trafficAccessToken);
    const kept = egressConfigOf(source);
    expect(kept).toEqual({ allowOut: [], denyOut: [], rules: source.rules, rulesOwner: 7, egressProxy: source.egressProxy });
    // A create from a snapshot: the kept egress, ingress as the create asked; its own rules win.
    expect(withInheritedEgress(undefined, kept)).toEqual({ allowPublicTraffic: true, ...kept });
    const own = networkFromCreate({ rules: { "c.test": rule({ C: "d" }) } })!;
    own.rulesOwner = 9;
    expect(withInheritedEgress(own, kept)).toMatchObject({ rules: own.rules, rulesOwner: 9, egressProxy: source.egressProxy });
    expect(withInheritedEgress(undefined, { allowOut: [], denyOut: [] })).toBeUndefined();
  });
});
