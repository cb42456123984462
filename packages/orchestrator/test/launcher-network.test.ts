// The launcher plumbs a sandbox's network itself (--net-*): eth0 inside with the MAC, address and default route it
// was given and no IPv6, lo up, the host end on the bridge without an IPv6 address; the host reaches the sandbox
// over it, both ends knowing the other's MAC permanently. A launch whose plumbing fails reports step "network" and leaves neither sandbox nor veth behind.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NetPlumbing } from "../src/network/index.js";
import { ensureTestRootfs } from "./helpers/base-rootfs.js";
import { POLL } from "./helpers/poll.js";
import { makeMiniRuntime, SandboxFixture } from "./helpers/sandbox-fixture.js";

const tag = randomBytes(2).toString("hex");
const bridge = `btl${tag}`;
const octet = 16 + (parseInt(tag, 16) % 200);
const gateway = `10.253.${octet}.1`;

function plumbing(n: number, overrides: Partial<NetPlumbing> = {}): NetPlumbing {
  return {
    hostVeth: `btl${tag}-${n}`,
    bridge,
    mac: `02:b0:0a:fd:${octet.toString(16).padStart(2, "0")}:${n.toString(16).padStart(2, "0")}`,
    address: `10.253.${octet}.${n}/24`,
    gateway,
    mtu: 1500,
    ...overrides,
  };
}

describe("launcher network plumbing", () => {
  let fx: SandboxFixture;

  beforeAll(async () => {
    fx = new SandboxFixture(await ensureTestRootfs());
    fx.runtime = await makeMiniRuntime(await fx.dir());
    // A fixed MAC, as the network manager gives its bridge: otherwise the bridge takes its ports' and the
    // sandbox's permanent entry for the gateway would name a MAC that changed.
    execFileSync("ip", ["link", "add", "name", bridge, "address", `02:b0:0a:fd:${octet.toString(16).padStart(2, "0")}:01`, "type", "bridge"]);
    execFileSync("ip", ["addr", "add", `${gateway}/24`, "dev", bridge]);
    execFileSync("ip", ["link", "set", bridge, "up"]);
  });
  afterAll(async () => {
    await fx.cleanup();
    execFileSync("ip", ["link", "del", bridge]);
  });

  it("gives the sandbox eth0 with its MAC, address and route, IPv6 off, before its command runs", async () => {
    const net = plumbing(2);
    // What the command sees first thing: the network is already there.
    const { out, sandbox } = await fx.run(
      [
        "cat /sys/class/net/eth0/address /sys/class/net/eth0/operstate /sys/class/net/lo/operstate",
        "cat /proc/sys/net/ipv6/conf/eth0/disable_ipv6",
        "awk 'NR>1 {print $1, $2, $3}' /proc/net/route",
        "grep -c eth0 /proc/net/if_inet6 || true",
        // Address, flags (0x6: complete and permanent) and MAC of each ARP entry.
        "awk 'NR>1 {print $1, $3, $4}' /proc/net/arp",
      ].join("; "),
      { network: net },
    );
    expect(out.split("\n")).toEqual([
      net.mac,
      "up",
      "unknown",
      "1",
      // Default route via 10.253.<octet>.1 and the subnet route, as /proc/net/route prints them (little endian hex).
      `eth0 00000000 01${octet.toString(16).padStart(2, "0").toUpperCase()}FD0A`,
      `eth0 00${octet.toString(16).padStart(2, "0").toUpperCase()}FD0A 00000000`,
      "0",
      // The gateway's MAC is known from the start and never expires, whatever the host's ARP table holds.
      `${gateway} 0x6 ${readFileSync(`/sys/class/net/${bridge}/address`, "utf8").trim()}`,
      "",
    ]);
    expect(readFileSync(`/sys/class/net/${net.hostVeth}/master/uevent`, "utf8")).toContain(`INTERFACE=${bridge}`);
    expect(readFileSync(`/sys/class/net/${net.hostVeth}/operstate`, "utf8").trim()).toBe("up");
    expect(execFileSync("ip", ["-6", "addr", "show", "dev", net.hostVeth], { encoding: "utf8" })).toBe("");
    // The host knows the sandbox's MAC before any traffic, permanently (no resolution under load, no GC).
    expect(execFileSync("ip", ["neigh", "show", `10.253.${octet}.2`, "dev", bridge], { encoding: "utf8" })).toContain(`lladdr ${net.mac} PERMANENT`);
    execFileSync("timeout", ["5", "bash", "-c", `exec 3<>/dev/tcp/10.253.${octet}.2/9 2>/dev/null || true`]);
    await fx.kill(sandbox);
    await expect.poll(() => existsSync(`/sys/class/net/${net.hostVeth}`), { ...POLL, message: "the veth to go with the sandbox" }).toBe(false);
  });

  it("fails at step network when the plumbing cannot be done, leaving no veth", async () => {
    const net = plumbing(3, { bridge: `btl${tag}x` });
    await expect(fx.launch({ command: ["/bin/sleep", "infinity"], network: net })).rejects.toMatchObject({
      code: "setup_failed",
      step: "network",
    });
    await expect.poll(() => existsSync(`/sys/class/net/${net.hostVeth}`), { ...POLL, message: "no veth left" }).toBe(false);
  });
});
