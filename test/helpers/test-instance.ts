// Names for a server instance under test: its own state dir, instance tag (cgroups, bridge, nft tables)
// and subnet, so tests never touch a real installation's resources.
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { randomBytes } from "node:crypto";

export interface TestInstance {
  stateDir: string;
  instance: string;
  subnet: string;
}

export function newTestInstance(label: string): TestInstance {
  const tag = randomBytes(2).toString("hex");
  return {
    stateDir: mkdtempSync(`/var/tmp/burrow-${label}-`),
    instance: `t${tag}`,
    subnet: `10.${freeSecondOctet()}.0.0/16`,
  };
}

/**
 * A second octet in 200-249 (inside 10/8, away from the default 10.213/16 of a real installation) whose /16 no
 * host route uses yet, so concurrent suites never pick the same subnet.
 */
function freeSecondOctet(): number {
  const routes = execFileSync("ip", ["-4", "route", "show"], { encoding: "utf8" });
  const taken = new Set([...routes.matchAll(/^10\.(\d+)\./gm)].map((m) => Number(m[1])));
  taken.add(213);
  const start = randomBytes(1)[0]! % 50;
  for (let i = 0; i < 50; i++) {
    const octet = 200 + ((start + i) % 50);
    if (!taken.has(octet)) return octet;
  }
  throw new Error("no free 10.200-249.0.0/16 subnet for a test instance");
}
