// Per-sandbox egress rules (allowOut/denyOut, proxied) in the instance's nftables table, on the real kernel: the chain
// and verdict-map element a sandbox gets, replaced in one transaction (a failing one leaves the old rules), removed
// with empty rules and on release, reaped when nobody leases the address; @proxied and @tunneled as `proxied` says,
// also for rules written in the old form (reserved deny entries). No traffic here (the conformance suite sends it to a
// fake internet); this checks the ruleset itself. Plus the parsing and canonical form of entries.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BurrowNetworkManager, createNetworkManager } from "../src/network/index.js";
import { normalizeEgressRules, parseEgressTarget, type EgressRules } from "../src/network/egress-rules.js";
import { spawnCommand } from "../src/network/exec.js";
import type { CommandRunner } from "../src/reaper/run-command.js";
import { readRecord } from "../src/sandbox-record.js";
import type { SandboxNetwork } from "../src/types.js";

describe("egress entries", () => {
  it("parses addresses, CIDRs, domains and wildcards, and names what it refuses", () => {
    expect(parseEgressTarget(" 1.2.3.4 ")).toEqual({ kind: "cidr", cidr: "1.2.3.4/32" });
    expect(parseEgressTarget("10.1.2.3/16")).toEqual({ kind: "cidr", cidr: "10.1.0.0/16" });
    expect(parseEgressTarget("0.0.0.0/0")).toEqual({ kind: "cidr", cidr: "0.0.0.0/0" });
    expect(parseEgressTarget("Example.COM.")).toEqual({ kind: "domain", domain: "example.com", wildcard: false });
    expect(parseEgressTarget("*.example.com")).toEqual({ kind: "domain", domain: "example.com", wildcard: true });
    for (const bad of ["1.2.3.256", "1.2.3", "10.0.0.0/33", "1.2.3.4:80", "::1", "localhost", "a..b", "-a.com", "*", "", "1.2.3.4/8/8"]) {
      expect(() => parseEgressTarget(bad), bad).toThrow(bad === "" ? /empty/ : bad);
    }
  });

  it("canonicalises: masked, covered prefixes dropped, sorted; domains after the CIDRs, lower case, once each", () => {
    expect(normalizeEgressRules({ allowOut: ["10.1.2.0/24", "10.0.0.0/8", "1.2.3.4", "1.2.3.4/32"], denyOut: ["0.0.0.0/0", "5.6.7.8"] })).toEqual({
      allowOut: ["1.2.3.4/32", "10.0.0.0/8"],
      denyOut: ["0.0.0.0/0"],
    });
    expect(normalizeEgressRules({ allowOut: ["Example.com.", "*.b.test", "1.2.3.4", "example.com"], denyOut: [] })).toEqual({
      allowOut: ["1.2.3.4/32", "*.b.test", "example.com"],
      denyOut: [],
    });
  });

  it("keeps proxied unless it is none, refuses an unknown one; a name in the lists is only ever a domain entry", () => {
    expect(normalizeEgressRules({ allowOut: [], denyOut: [], proxied: "inspect" })).toEqual({ allowOut: [], denyOut: [], proxied: "inspect" });
    expect(normalizeEgressRules({ allowOut: [], denyOut: [], proxied: "none" })).toStrictEqual({ allowOut: [], denyOut: [] });
    expect(() => normalizeEgressRules({ denyOut: [], proxied: "all" as never })).toThrow(/'all'/);
    // The old form is read only from files written before proxied existed (legacy-egress-records.test.ts).
    expect(normalizeEgressRules({ allowOut: [], denyOut: ["egress-proxy.burrow.invalid"] })).toStrictEqual({ allowOut: [], denyOut: ["egress-proxy.burrow.invalid"] });
  });
});

const rand = randomBytes(3).toString("hex");
const instance = `e${rand}`;
const subnet = `10.199.${1 + ((randomBytes(1)[0] ?? 0) % 250)}.0/24`;
const table = `burrow_${instance}`;
const sh = (args: string[]) => execFileSync("nft", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

/** The rules of a sandbox's chain as nft prints them, or undefined when the chain does not exist. */
function chainRules(ip: string): string[] | undefined {
  try {
    return sh(["list", "chain", "inet", table, `egress_${ip.replaceAll(".", "_")}`])
      .split("\n")
      .map((l) => l.trim().replace(/counter packets \d+ bytes \d+ /, ""))
      .filter((l) => l && !l.startsWith("table") && !l.startsWith("chain") && l !== "}");
  } catch {
    return undefined;
  }
}

const mapText = () => sh(["list", "map", "inet", table, "egress"]);
const setText = (set: string) => sh(["list", "set", "inet", table, set]);
const internetText = () => sh(["list", "set", "inet", table, "internet"]);

describe("egress ruleset (real kernel)", () => {
  let nm: BurrowNetworkManager;
  // Set to make the next nft transaction fail at its end, after all its other commands.
  let breakNextNft = false;
  const runCommand: CommandRunner = (cmd, args, opts = {}) => {
    if (cmd === "nft" && breakNextNft && opts.input) {
      breakNextNft = false;
      return spawnCommand(cmd, args, { ...opts, input: `${opts.input}add rule inet ${table} no_such_chain accept\n` });
    }
    return spawnCommand(cmd, args, opts);
  };

  beforeAll(async () => {
    nm = createNetworkManager({ instance, subnet, runCommand });
    await nm.setup();
  });
  afterAll(async () => {
    await nm?.teardown();
  });

  async function reserve(id: string, opts: { allowInternetAccess: boolean; egress?: EgressRules }): Promise<SandboxNetwork> {
    const r = nm.reserve(id, opts);
    await r.firewall;
    return r.network;
  }

  it("gives a sandbox its own chain, replaces it whole, and removes it with empty rules", async () => {
    const net = await reserve("sbx-a", { allowInternetAccess: true });
    const { ip } = net;
    expect(chainRules(ip)).toBeUndefined();
    expect(internetText()).toContain(ip);

    await net.setEgress(true, { allowOut: ["198.51.100.7"], denyOut: ["198.51.100.0/24", "203.0.113.0/24"] });
    expect(chainRules(ip)).toEqual([
      "ip daddr 198.51.100.7 accept",
      "ip daddr { 198.51.100.0/24, 203.0.113.0/24 } drop",
      "accept",
    ]);
    expect(mapText()).toContain(`${ip} : jump egress_${ip.replaceAll(".", "_")}`);

    // Internet off with an allow list: only the list, and still masqueraded (in @internet).
    await net.setEgress(false, { allowOut: ["203.0.113.0/28"], denyOut: [] });
    expect(chainRules(ip)).toEqual(["ip daddr 203.0.113.0/28 accept", "drop"]);
    expect(internetText()).toContain(ip);

    // A failing transaction leaves the rules as they were.
    breakNextNft = true;
    await expect(net.setEgress(true, { allowOut: [], denyOut: ["192.0.2.0/24"] })).rejects.toThrow(/no_such_chain/);
    expect(chainRules(ip)).toEqual(["ip daddr 203.0.113.0/28 accept", "drop"]);

    // Malformed entries never reach nft.
    await expect(net.setEgress(true, { allowOut: ["300.0.0.1"], denyOut: [] })).rejects.toThrow(/300\.0\.0\.1/);

    await net.setEgress(false, { allowOut: [], denyOut: [] });
    expect(chainRules(ip)).toBeUndefined();
    expect(mapText()).not.toContain(ip);
    expect(internetText()).not.toContain(ip);
    await net.release();
  });

  it("setInternetAccess keeps a sandbox's rules, and release leaves nothing behind", async () => {
    const net = await reserve("sbx-b", { allowInternetAccess: true, egress: { allowOut: [], denyOut: ["203.0.113.0/24"] } });
    const { ip } = net;
    expect(chainRules(ip)).toEqual(["ip daddr 203.0.113.0/24 drop", "accept"]);
    await net.setInternetAccess(false);
    expect(chainRules(ip)).toEqual(["drop"]);
    await net.setInternetAccess(true);
    expect(chainRules(ip)).toEqual(["ip daddr 203.0.113.0/24 drop", "accept"]);
    await net.release();
    expect(chainRules(ip)).toBeUndefined();
    expect(mapText()).not.toContain(ip);
    expect(internetText()).not.toContain(ip);
  });

  it("re-adopts a sandbox's rules after a restart and reaps the chains of addresses nobody leases", async () => {
    const kept = await reserve("sbx-kept", { allowInternetAccess: true, egress: { allowOut: [], denyOut: ["198.51.100.0/24"] } });
    // A sandbox with a user's proxy: its address is in @proxied and @tunneled too.
    const gone = await reserve("sbx-gone", { allowInternetAccess: false, egress: { allowOut: ["198.51.100.1"], denyOut: [], proxied: "tunnel" } });
    expect(setText("proxied")).toContain(gone.ip);
    expect(setText("tunneled")).toContain(gone.ip);
    // A restarted orchestrator: a new manager over the same kernel state, which adopts only one of the two.
    const again = createNetworkManager({ instance, subnet, runCommand });
    await again.setup();
    const adopted = again.adopt("sbx-kept", kept.ip, kept.hostVeth, true, { allowOut: [], denyOut: ["198.51.100.0/24"] });
    await again.reapOrphans(["sbx-kept"]);
    expect(chainRules(kept.ip)).toEqual(["ip daddr 198.51.100.0/24 drop", "accept"]);
    expect(chainRules(gone.ip)).toBeUndefined();
    expect(mapText()).not.toContain(`${gone.ip} :`);
    // Left in @proxied / @tunneled, the address would send a later sandbox's TCP to the proxy.
    expect(setText("proxied")).not.toContain(gone.ip);
    expect(setText("tunneled")).not.toContain(gone.ip);
    // The adopted rules are known: switching the internet off keeps the deny list's chain.
    await adopted.setInternetAccess(false);
    expect(chainRules(kept.ip)).toEqual(["drop"]);
    await adopted.release();
    expect(chainRules(kept.ip)).toBeUndefined();
  });

  it("puts a sandbox in @proxied and @tunneled as proxied says, without a chain when it has no entries", async () => {
    const net = await reserve("sbx-p", { allowInternetAccess: true, egress: { allowOut: [], denyOut: [], proxied: "inspect" } });
    const { ip } = net;
    expect(setText("proxied")).toContain(ip);
    expect(setText("tunneled")).not.toContain(ip);
    expect(chainRules(ip)).toBeUndefined();
    await net.setEgress(true, { allowOut: [], denyOut: ["198.51.100.0/24"], proxied: "tunnel" });
    expect(setText("proxied")).toContain(ip);
    expect(setText("tunneled")).toContain(ip);
    expect(chainRules(ip)).toEqual(["ip daddr 198.51.100.0/24 drop", "accept"]);
    // Kept by the internet switch, which rewrites the sets from what the manager knows.
    await net.setInternetAccess(false);
    expect(setText("tunneled")).toContain(ip);
    await net.setEgress(true, { allowOut: [], denyOut: [] });
    expect(setText("proxied")).not.toContain(ip);
    expect(setText("tunneled")).not.toContain(ip);
    await net.release();
  });

  it("gives a sandbox with inspected ports an inspect chain sending them to the any-port listener, replaced by updates, reaped when nobody leases it", async () => {
    const inspectRules = (ip: string) => {
      try {
        return sh(["list", "chain", "inet", table, `inspect_${ip.replaceAll(".", "_")}`])
          .split("\n")
          .map((l) => l.trim())
          .filter((l) => l && !l.startsWith("table") && !l.startsWith("chain") && l !== "}");
      } catch {
        return undefined;
      }
    };
    const inspectMap = () => sh(["list", "map", "inet", table, "inspect"]);
    await nm.setRedirects([], new Map(), undefined, undefined, 41234);
    expect(sh(["list", "chain", "inet", table, "inspect_dnat"])).toContain(`dnat ip to ${nm.gateway}:41234`);
    expect(sh(["list", "chain", "inet", table, "redirects"])).toContain("ip saddr vmap @inspect");
    const net = await reserve("sbx-i", { allowInternetAccess: true, egress: { allowOut: [], denyOut: [], proxied: "inspect", inspectPorts: [9443, 443, 8443, 8443] } });
    expect(inspectRules(net.ip)).toEqual(["tcp dport { 8443, 9443 } goto inspect_dnat"]);
    expect(inspectMap()).toContain(`${net.ip} : jump inspect_`);
    expect(nm.egressOf(net.ip)?.rules).toEqual({ allowOut: [], denyOut: [], proxied: "inspect", inspectPorts: [8443, 9443] });
    await net.setEgress(true, { allowOut: [], denyOut: [], proxied: "inspect", inspectPorts: [8080] });
    expect(inspectRules(net.ip)).toEqual(["tcp dport 8080 goto inspect_dnat"]);
    await net.setEgress(true, { allowOut: [], denyOut: [], proxied: "inspect" });
    expect(inspectRules(net.ip)).toBeUndefined();
    expect(inspectMap()).not.toContain(`${net.ip} :`);
    await net.setEgress(true, { allowOut: [], denyOut: [], proxied: "inspect", inspectPorts: [8443] });
    // A restarted orchestrator that does not adopt it reaps its chain and map element.
    const again = createNetworkManager({ instance, subnet, runCommand });
    await again.setup();
    await again.reapOrphans([]);
    expect(inspectRules(net.ip)).toBeUndefined();
    expect(inspectMap()).not.toContain(`${net.ip} :`);
    expect(() => normalizeEgressRules({ inspectPorts: [70000] })).toThrow(/70000/);
  });

  it("re-adopts rules read from a record written in the old form (reserved deny entries) as the proxying they stood for", async () => {
    const net = await reserve("sbx-old", { allowInternetAccess: true, egress: { allowOut: [], denyOut: ["198.51.100.0/24"], proxied: "tunnel" } });
    // What a sandbox record of before `proxied` holds for a sandbox with a user's proxy, read as a restart reads it.
    const dir = mkdtempSync(join(tmpdir(), "burrow-old-record-"));
    try {
      writeFileSync(join(dir, "sandbox.json"), JSON.stringify({ sandboxId: "sbx-old", egress: { allowOut: [], denyOut: ["198.51.100.0/24", "egress-proxy.burrow.invalid"] } }));
      const record = await readRecord(dir);
      const again = createNetworkManager({ instance, subnet, runCommand });
      await again.setup();
      const adopted = again.adopt("sbx-old", net.ip, net.hostVeth, true, record?.egress);
      expect(again.egressOf(net.ip)?.rules).toEqual({ allowOut: [], denyOut: ["198.51.100.0/24"], proxied: "tunnel" });
      // Rewritten from the adopted rules: still proxied and tunneled, and the old entry is no deny entry of the chain.
      await adopted.setInternetAccess(true);
      expect(setText("proxied")).toContain(net.ip);
      expect(setText("tunneled")).toContain(net.ip);
      expect(chainRules(net.ip)).toEqual(["ip daddr 198.51.100.0/24 drop", "accept"]);
      await adopted.release();
      expect(setText("tunneled")).not.toContain(net.ip);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
