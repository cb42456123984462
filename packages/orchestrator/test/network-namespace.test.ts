// The network manager of a server that runs in a network namespace of its own, joined as nsenter --net joins it (as
// systemd's NetworkNamespacePath= does): /sys still lists the host's links there. A child process (Node cannot
// change its own namespace; it runs the built package, so `npx tsc -b` first) sets up, sets up again as a restart
// does — its bridge is already there —, and tears down, in a namespace this test creates and deletes. Its ip_forward
// registration is its namespace's, never the host's registry.
import { execFileSync, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const rand = randomBytes(3).toString("hex");
const netns = `burrowtest-nm-${rand}`;
const instance = `n${rand}`;
const DIST = join(import.meta.dirname, "..", "dist", "network", "index.js");

const CHILD = `
import { createNetworkManager } from ${JSON.stringify(DIST)};
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
const [instance, subnet] = process.argv.slice(1);
const links = () => execFileSync("ip", ["-o", "link", "show"], { encoding: "utf8" });
const registries = () => readdirSync("/run/burrow").filter((n) => n.startsWith("ip-forward") && n.endsWith(".json"));
const report = {};
await createNetworkManager({ instance, subnet }).setup();
const restarted = createNetworkManager({ instance, subnet });
await restarted.setup();
report.bridgeUp = links().includes("burrow-" + instance + ":");
report.ipForward = readFileSync("/proc/sys/net/ipv4/ip_forward", "utf8").trim();
report.registriesSetUp = registries();
try {
  report.hostHolders = JSON.parse(readFileSync("/run/burrow/ip-forward.json", "utf8")).holders;
} catch {
  report.hostHolders = [];
}
await restarted.teardown();
report.bridgeAfterTeardown = links().includes("burrow-" + instance + ":");
report.registriesAfter = registries();
console.log(JSON.stringify(report));
`;

describe("network manager in a network namespace joined without remounting /sys", () => {
  afterAll(() => {
    execFileSync("ip", ["netns", "del", netns]);
  });

  it("sets up twice (a restart finds its bridge), tears down, and registers ip_forward for its namespace only", () => {
    execFileSync("ip", ["netns", "add", netns]);
    const nsInode = /\[(\d+)\]/.exec(execFileSync("ip", ["netns", "exec", netns, "readlink", "/proc/self/ns/net"], { encoding: "utf8" }))![1]!;
    const child = spawnSync("nsenter", [`--net=/run/netns/${netns}`, "--", process.execPath, "--input-type=module", "-e", CHILD, instance, "10.198.7.0/24"], {
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(child.status, child.stderr).toBe(0);
    const report = JSON.parse(child.stdout) as Record<string, unknown>;
    const own = `ip-forward-net${nsInode}.json`;
    expect(report).toMatchObject({ bridgeUp: true, ipForward: "1", bridgeAfterTeardown: false });
    expect(report.registriesSetUp).toContain(own);
    expect(report.registriesAfter).not.toContain(own);
    // Never a holder of the host's registry, whose last holder would otherwise restore the host from this namespace's value.
    expect(report.hostHolders).not.toContain(instance);
    // Nothing of it on the host.
    expect(execFileSync("ip", ["-o", "link", "show"], { encoding: "utf8" })).not.toContain(`burrow-${instance}`);
  });
});
