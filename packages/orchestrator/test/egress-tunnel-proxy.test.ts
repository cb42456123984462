// The catch-all listener of sandboxes whose egress goes through their user's proxy, on loopback with real parts: a
// temporary nft table of this test's own DNATs connections from 127.0.0.5 to any port of 127.0.0.3 to the listener
// (standing in for a sandbox's TCP), which finds the original destination in conntrack, judges it and connects
// through a real SOCKS5 or HTTP CONNECT proxy (test/helpers/test-proxies.mjs) to a target on 127.0.0.3 that sees the
// proxy's connection, not the client's. Refusals (rules, forbidden destinations, wrong credentials, a proxy at a
// forbidden address) close the connection and are audited; nothing ever goes direct.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer, connect, type AddressInfo, type Server } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { POLL } from "./helpers/poll.js";
import { EgressAudit } from "../src/egress/egress-audit.js";
import { startTunnelProxy, type TunnelPolicy, type TunnelProxy } from "../src/egress/tunnel-proxy.js";
import { parseUpstreamProxy } from "../src/egress/upstream-proxy.js";
import { startHttpConnectProxy, startSocks5Proxy, type TestProxy } from "../../../test/helpers/test-proxies.mjs";

const CLIENT = "127.0.0.5";
const TARGET = "127.0.0.3";
const TABLE = `burrowtun${randomBytes(3).toString("hex")}`;
const nft = (script: string) => execFileSync("nft", ["-f", "-"], { input: script });
let target: Server;
let targetPort: number;
let socks: TestProxy;
let http: TestProxy;
let tunnel: TunnelProxy;
const audit = new EgressAudit();
let policy: TunnelPolicy;

/** What the target answers a connection from CLIENT to TARGET:port ("" when the connection was closed). */
function ask(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: TARGET, port, localAddress: CLIENT });
    let text = "";
    socket.setEncoding("utf8");
    socket.on("data", (d: string) => (text += d));
    socket.on("error", () => resolve(text));
    socket.once("close", () => resolve(text));
    socket.once("connect", () => socket.write("hi\n"));
  });
}

beforeAll(async () => {
  target = createServer((s) => s.once("data", (d) => s.end(`target got ${d.toString().trim()} from ${s.remoteAddress}`)));
  await new Promise<void>((resolve) => target.listen(0, TARGET, resolve));
  targetPort = (target.address() as AddressInfo).port;
  socks = await startSocks5Proxy({ host: "127.0.0.1", username: "u", password: "p" });
  http = await startHttpConnectProxy({ host: "127.0.0.1" });
  tunnel = await startTunnelProxy({
    gateway: "127.0.0.1",
    policyOf: (ip) => (ip === CLIENT ? policy : undefined),
    resolve4: async (name) => (name === "proxy.test" ? ["127.0.0.1"] : name === "meta.test" ? ["169.254.169.254"] : []),
    // The test's proxies are on loopback, which the real forbidden list always refuses; here only link-local is.
    forbidden: (ip) => (ip.startsWith("169.254.") ? "link-local (metadata)" : undefined),
    audit,
  });
  nft(`add table ip ${TABLE}
add chain ip ${TABLE} out { type nat hook output priority -100; policy accept; }
add rule ip ${TABLE} out ip saddr ${CLIENT} ip daddr ${TARGET} tcp dport != 0 dnat to 127.0.0.1:${tunnel.port}
`);
});

afterAll(async () => {
  try {
    nft(`delete table ip ${TABLE}\n`);
  } finally {
    await Promise.all([tunnel?.close(), socks?.close(), http?.close()]);
    await new Promise((resolve) => target.close(resolve));
  }
});

const rules = (allowOut: string[], denyOut: string[]) => ({ allowOut, denyOut });

describe("tunnel proxy", () => {
  it("any port goes through the user's SOCKS5 proxy with credentials; the target sees the proxy", async () => {
    policy = { sandboxId: "s1", internet: true, rules: undefined, upstream: parseUpstreamProxy("socks5://proxy.test:" + socks.port, "u", "p") };
    expect(await ask(targetPort)).toBe("target got hi from 127.0.0.1");
    expect(socks.log.at(-1)).toBe(`CONNECT ${TARGET}:${targetPort}`);
    await expect.poll(() => audit.list("s1").at(-1), POLL).toMatchObject({ verdict: "allowed", ip: TARGET, port: targetPort, rule: "no rules", bytesOut: 3 });
  });

  it("through an HTTP CONNECT proxy too", async () => {
    policy = { sandboxId: "s2", internet: true, rules: undefined, upstream: parseUpstreamProxy(`http://127.0.0.1:${http.port}`) };
    expect(await ask(targetPort)).toBe("target got hi from 127.0.0.1");
    expect(http.log.at(-1)).toBe(`CONNECT ${TARGET}:${targetPort}`);
  });

  it("the sandbox's rules still decide, before the proxy is asked", async () => {
    const before = socks.log.length;
    policy = { sandboxId: "s3", internet: true, rules: rules([], [`${TARGET}/32`]), upstream: parseUpstreamProxy(`127.0.0.1:${socks.port}`, "u", "p") };
    expect(await ask(targetPort)).toBe("");
    policy = { ...policy, internet: false, rules: undefined };
    expect(await ask(targetPort)).toBe("");
    expect(socks.log.length).toBe(before);
    expect(audit.list("s3").map((r) => [r.verdict, r.rule])).toEqual([
      ["denied", `${TARGET}/32`],
      ["denied", "internet"],
    ]);
  });

  it("fails closed: wrong credentials, a proxy at a forbidden address, a proxy that does not resolve", async () => {
    policy = { sandboxId: "s4", internet: true, rules: undefined, upstream: parseUpstreamProxy(`127.0.0.1:${socks.port}`, "u", "wrong") };
    expect(await ask(targetPort)).toBe("");
    expect(socks.log.at(-1)).toBe("AUTH FAILED");
    policy = { ...policy, upstream: parseUpstreamProxy("meta.test:1080") };
    expect(await ask(targetPort)).toBe("");
    policy = { ...policy, upstream: parseUpstreamProxy("nowhere.test:1080") };
    expect(await ask(targetPort)).toBe("");
    const rules4 = audit.list("s4").map((r) => r.rule);
    expect(rules4[0]).toMatch(/^egress proxy: SOCKS5 proxy 127\.0\.0\.1:\d+ refused the credentials$/);
    expect(rules4[1]).toMatch(/meta\.test \(169\.254\.169\.254\) is not allowed as a proxy: link-local/);
    expect(rules4[2]).toMatch(/nowhere\.test does not resolve/);
    expect(audit.list("s4").every((r) => r.verdict === "denied")).toBe(true);
  });

  it("a connection from an address without a policy is closed", async () => {
    policy = undefined as unknown as TunnelPolicy;
    expect(await ask(targetPort)).toBe("");
  });
});
