// Names for a server instance under test: its own state dir, instance tag (cgroups, bridge, nft tables)
// and subnet, so tests never touch a real installation's resources.
import { execFileSync } from "node:child_process";
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmdirSync, rmSync, statSync, writeSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { join } from "node:path";

export interface TestInstance {
  stateDir: string;
  instance: string;
  subnet: string;
  /** A network namespace (its name under /run/netns) the server and `burrow down` run in; the host's when absent. */
  netns?: string | undefined;
  /** The address the server listens on and is reached at. @default 127.0.0.1 */
  host?: string | undefined;
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
 * Reservations of second octets by test processes, until their bridge exists (then the host route shows it): two
 * suites starting at once would otherwise both see an octet free and pick it.
 */
const RESERVATIONS = "/run/burrow-test-subnets";
/** A reservation outlives its process's bridge by far: one older than this is stale even if its pid was reused. */
const RESERVATION_MAX_AGE_MS = 3 * 60 * 60 * 1000;

/**
 * A second octet in 200-249 (inside 10/8, away from the default 10.213/16 of a real installation) whose /16 no
 * host route uses yet and no live test process has reserved, so concurrent suites never pick the same subnet.
 */
function freeSecondOctet(): number {
  const routes = execFileSync("ip", ["-4", "route", "show"], { encoding: "utf8" });
  const taken = new Set([...routes.matchAll(/^10\.(\d+)\./gm)].map((m) => Number(m[1])));
  taken.add(213);
  mkdirSync(RESERVATIONS, { recursive: true });
  const start = randomBytes(1)[0]! % 50;
  for (let i = 0; i < 50; i++) {
    const octet = 200 + ((start + i) % 50);
    if (!taken.has(octet) && reserve(octet)) return octet;
  }
  throw new Error("no free 10.200-249.0.0/16 subnet for a test instance");
}

/** Take the octet's reservation for this process, or a stale one's (its process gone, or very old). */
function reserve(octet: number): boolean {
  const file = join(RESERVATIONS, String(octet));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, "wx");
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return true;
    } catch {
      if (!isStale(file)) return false;
      rmSync(file, { force: true });
    }
  }
  return false;
}

function isStale(file: string): boolean {
  try {
    if (Date.now() - statSync(file).mtimeMs > RESERVATION_MAX_AGE_MS) return true;
    const pid = Number(readFileSync(file, "utf8"));
    if (!Number.isInteger(pid) || pid <= 0) return true;
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "ESRCH" || (err as NodeJS.ErrnoException).code === "ENOENT";
  }
}

/**
 * At the end of a run: drop this process's reservations and the stale ones (test workers have exited), and the
 * directory when nothing is left in it, so that a run leaves nothing behind.
 */
export function pruneSubnetReservations(): void {
  let names: string[];
  try {
    names = readdirSync(RESERVATIONS);
  } catch {
    return; // nothing was ever reserved
  }
  for (const name of names) {
    const file = join(RESERVATIONS, name);
    try {
      if (readFileSync(file, "utf8") === String(process.pid) || isStale(file)) rmSync(file, { force: true });
    } catch {
      // removed meanwhile
    }
  }
  try {
    rmdirSync(RESERVATIONS);
  } catch {
    // another run's reservations are still there
  }
}
