// Names for a server instance under test: its own state dir, instance tag (cgroups, bridge, nft tables)
// and subnet, so tests never touch a real installation's resources.
import { mkdtempSync } from "node:fs";
import { randomBytes } from "node:crypto";

export interface TestInstance {
  stateDir: string;
  instance: string;
  subnet: string;
}

export function newTestInstance(label: string): TestInstance {
  const tag = randomBytes(2).toString("hex");
  // Second octet 200-249: inside 10/8, away from the default 10.213/16 of a real installation.
  const octet = 200 + (randomBytes(1)[0]! % 50);
  return {
    stateDir: mkdtempSync(`/var/tmp/burrow-${label}-`),
    instance: `t${tag}`,
    subnet: `10.${octet === 213 ? 214 : octet}.0.0/16`,
  };
}
