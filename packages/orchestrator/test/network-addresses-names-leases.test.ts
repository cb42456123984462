// Pure parts of the network manager: address arithmetic, conflict detection, names, leases, scripts.
import { describe, expect, it } from "vitest";
import { findConflicts, uplinkMtu } from "../src/network/host-check.js";
import { formatCidr, overlaps, parseCidr } from "../src/network/ipv4.js";
import { LeasePool } from "../src/network/leases.js";
import { leaseOfVeth, networkNames, vethName } from "../src/network/names.js";
import { NetworkError } from "../src/network/network-error.js";
import { setupScript } from "../src/network/ruleset.js";

describe("ipv4", () => {
  it("masks CIDRs and detects overlap in both directions", () => {
    expect(formatCidr(parseCidr("10.213.7.9/16"))).toBe("10.213.0.0/16");
    expect(overlaps(parseCidr("10.0.0.0/8"), parseCidr("10.213.0.0/16"))).toBe(true);
    expect(overlaps(parseCidr("10.213.0.0/16"), parseCidr("10.0.0.0/8"))).toBe(true);
    expect(overlaps(parseCidr("10.213.0.0/16"), parseCidr("10.214.0.0/16"))).toBe(false);
    expect(overlaps(parseCidr("192.0.2.2/32"), parseCidr("192.0.2.0/24"))).toBe(true);
    for (const bad of ["10.0.0.0", "10.0.0/8", "10.0.0.256/8", "10.0.0.0/33", "a.b.c.d/8"]) {
      expect(() => parseCidr(bad)).toThrow(NetworkError);
    }
  });
});

describe("host conflicts", () => {
  const view = {
    routes: [
      { dst: "default", dev: "eth0" },
      { dst: "0.0.0.0/1", dev: "tun0" },
      { dst: "192.0.2.0/24", dev: "eth0" },
      { dst: "10.213.5.0/24", dev: "burrow-main" },
      { dst: "192.0.2.2", dev: "eth0", table: "local", type: "local" },
    ],
    links: [
      { ifname: "eth0", mtu: 1400, addr_info: [{ family: "inet", local: "192.0.2.2", prefixlen: 24 }] },
      { ifname: "burrow-main", addr_info: [{ family: "inet", local: "10.213.5.1", prefixlen: 24 }] },
    ],
  };

  it("names overlapping routes and addresses, skipping the default route and our own bridge", () => {
    expect(findConflicts(view, parseCidr("10.213.5.0/24"), "burrow-main")).toEqual([]);
    const c = findConflicts(view, parseCidr("192.0.2.128/25"), "burrow-main");
    expect(c.join("; ")).toContain("route 192.0.2.0/24 dev eth0");
    expect(c.join("; ")).toContain("address 192.0.2.2/24 on eth0");
    expect(findConflicts(view, parseCidr("10.213.0.0/16"), "other")).toContain("address 10.213.5.1/24 on burrow-main");
  });

  it("takes the MTU of the default route's interface", () => {
    expect(uplinkMtu(view)).toBe(1400);
  });
});

describe("names and leases", () => {
  it("derives short, instance-unique, reversible veth names", () => {
    const n = networkNames("abc");
    expect(n.bridge).toBe("burrow-abc");
    expect(vethName(n, 0xfffff)).toBe("babc-fffff");
    expect(vethName(n, 0xfffff).length).toBeLessThanOrEqual(15);
    expect(leaseOfVeth(n, "babc-2a")).toBe(42);
    expect(leaseOfVeth(networkNames("ab"), "babc-2a")).toBeUndefined();
    expect(() => networkNames("Bad-Name")).toThrow(NetworkError);
    expect(() => networkNames("abc", "a-very-long-bridge-name")).toThrow(NetworkError);
  });

  it("leases rotate, skip unusable ones, and run out with a typed error", () => {
    const pool = new LeasePool(parseCidr("10.0.0.0/29")); // leases 2..6
    expect(pool.address(pool.take())).toBe("10.0.0.2");
    expect(pool.take((l) => l !== 3)).toBe(4);
    pool.free(2);
    expect(pool.take()).toBe(5); // rotates on instead of reusing 2 at once
    expect(pool.take()).toBe(6);
    expect(pool.take()).toBe(2);
    expect(pool.take()).toBe(3);
    expect(() => pool.take()).toThrow(expect.objectContaining({ code: "exhausted" }));
    expect(pool.leaseOf("10.0.0.5")).toBe(5);
    expect(() => pool.leaseOf("10.0.1.5")).toThrow(NetworkError);
  });

  it("accepts subnets up to /12, whose leases still fit in a veth name with the longest instance", async () => {
    const { createNetworkManager } = await import("../src/network/index.js");
    expect(() => createNetworkManager({ instance: "abcdefgh", subnet: "10.0.0.0/12" })).not.toThrow();
    expect(() => createNetworkManager({ instance: "a", subnet: "10.0.0.0/11" })).toThrow(NetworkError);
    expect(() => createNetworkManager({ instance: "a", subnet: "10.0.0.0/31" })).toThrow(NetworkError);
  });

  it("setup script confines the instance's ports and keeps set elements on re-run", () => {
    const s = setupScript({ names: networkNames("abc"), gateway: "10.9.0.1", denyDestinations: ["10.9.0.0/16"] });
    expect(s).toContain('iifname "burrow-abc" counter drop');
    expect(s).toContain("ip daddr { 169.254.0.0/16, 10.9.0.0/16 }");
    expect(s).toContain('iifname "babc-*"');
    // Only chains are flushed, and the egress limits' meters (token buckets that must not outlive a change of rate).
    expect(s.match(/flush (table|set) \S+ \S+ \S+/g)).toEqual(["flush set inet burrow_abc conn_rate", "flush set inet burrow_abc bytes_up", "flush set inet burrow_abc bytes_down"]);
  });
});
