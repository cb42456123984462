// What every benchmark needs from the host: a sandbox subnet nobody routes yet, a free loopback port, and a
// bounded-concurrency loop.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer } from "node:net";

/**
 * A 10.x.0.0/16 that no host route uses yet: 10.250-254 first (the e2e tests' instances take 10.200-249, so a
 * benchmark running beside the tests does not take a subnet a test server picked and will reuse at its restart),
 * then 10.200-249 from a random start.
 */
export function freeSubnet() {
  const routes = execFileSync("ip", ["-4", "route", "show"], { encoding: "utf8" });
  const taken = new Set([...routes.matchAll(/^10\.(\d+)\./gm)].map((m) => Number(m[1])));
  const start = randomBytes(1)[0] % 50;
  const candidates = [250, 251, 252, 253, 254, ...Array.from({ length: 50 }, (_, i) => 200 + ((start + i) % 50))];
  const octet = candidates.find((o) => !taken.has(o));
  if (octet === undefined) throw new Error("no free 10.200-254.0.0/16 subnet");
  return `10.${octet}.0.0/16`;
}

/** A TCP port free on 127.0.0.1 right now. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Run `fn` over `items` with at most `limit` in flight; rejects with the first failure. */
export async function bounded(items, limit, fn) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const index = next++;
        await fn(items[index], index);
      }
    }),
  );
}

/** Like bounded, but every item runs whatever the others do; resolves with the failures. */
export async function boundedErrors(items, limit, fn) {
  const errors = [];
  await bounded(items, limit, (item, index) => fn(item, index).catch((error) => errors.push(error)));
  return errors;
}
