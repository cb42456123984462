// A start that fails part-way (here: its subnet is already routed on the host) leaves the host as it was: no
// reaper it started, no cgroup parents of its instance, no mount under its state directory.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { envdRuntimeFiles } from "@burrow/envd";
import { LocalOrchestrator } from "../src/local-orchestrator.js";
import { reaperPaths, reaperPid } from "../src/reaper/reaper.js";

const tag = Math.floor(Math.random() * 0xffff).toString(16);
const instance = `fs${tag}`;
/** An interface of the test's own that holds the subnet (a bridge: this kernel has no dummy links). */
const dummy = `bfs${tag}`;
let stateDir = "";

function freeSubnetOctet(): number {
  const routes = execFileSync("ip", ["-4", "route", "show"], { encoding: "utf8" });
  const taken = new Set([...routes.matchAll(/^10\.(\d+)\./gm)].map((m) => Number(m[1])));
  const octet = [...Array(50).keys()].map((i) => 200 + ((i + Number.parseInt(tag, 16)) % 50)).find((o) => !taken.has(o));
  if (octet === undefined) throw new Error("no free subnet");
  return octet;
}

afterAll(async () => {
  if (existsSync(`/sys/class/net/${dummy}`)) execFileSync("ip", ["link", "del", dummy]);
  if (stateDir) await rm(stateDir, { recursive: true, force: true });
});

describe("a start that fails part-way", () => {
  it("stops the reaper it started, removes its cgroup parents and unmounts its storage", async () => {
    stateDir = await mkdtemp("/var/tmp/burrow-failed-start-");
    const octet = freeSubnetOctet();
    // Something else holds the subnet: the network manager refuses it after reaper, storage and cgroups are up.
    execFileSync("ip", ["link", "add", dummy, "type", "bridge"]);
    execFileSync("ip", ["addr", "add", `10.${octet}.0.1/16`, "dev", dummy]);
    execFileSync("ip", ["link", "set", dummy, "up"]);

    await expect(
      LocalOrchestrator.create({
        config: { stateDir, instance, subnet: `10.${octet}.0.0/16`, pool: { template: "base", size: 0 } },
        buildBaseTemplate: false,
        envd: envdRuntimeFiles(),
      }),
    ).rejects.toMatchObject({ message: expect.stringContaining("overlaps") });

    expect(reaperPid(reaperPaths(stateDir))).toBeUndefined();
    const parents = readdirSync("/sys/fs/cgroup").map((h) => join("/sys/fs/cgroup", h, `burrow-${instance}`));
    expect(parents.filter((dir) => existsSync(dir))).toEqual([]);
    const mounts = readFileSync("/proc/self/mountinfo", "utf8")
      .split("\n")
      .map((line) => line.split(" ")[4] ?? "")
      .filter((mountPoint) => mountPoint.startsWith(`${stateDir}/`));
    expect(mounts).toEqual([]);
  }, 120_000);
});
