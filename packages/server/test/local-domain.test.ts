// The domain the API advertises for getHost() (local-domain.ts), decided against this host's real resolver:
// `npm start` installs libnss-myhostname, so `*.burrow.localhost` resolves to loopback here for Node and Python
// (curl resolves `.localhost` names by itself; test/conformance/get-host.test.ts uses all three).
import { lookup } from "node:dns/promises";
import { execFileSync } from "node:child_process";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { resolveDomain } from "../src/local-domain.js";

function capture() {
  const lines: string[] = [];
  const logger = pino({ level: "warn" }, { write: (line: string) => lines.push(line) });
  return { logger, warnings: () => lines.map((line) => (JSON.parse(line) as { msg: string }).msg) };
}

describe("resolveDomain", () => {
  it("resolves *.burrow.localhost to loopback on this host, for Node and Python (getaddrinfo)", async () => {
    const name = "8000-abc123.burrow.localhost";
    const node = (await lookup(name, { all: true })).map((row) => row.address);
    expect(node).toContain("127.0.0.1");
    const python = JSON.parse(
      execFileSync("python3", ["-c", "import socket,sys,json; print(json.dumps(sorted({a[4][0] for a in socket.getaddrinfo(sys.argv[1], 80)})))", name], { encoding: "utf8" }),
    ) as string[];
    expect(python).toContain("127.0.0.1");
  });

  it("advertises burrow.localhost:<port> for a loopback server, once the port is known", async () => {
    const { logger, warnings } = capture();
    for (const host of ["127.0.0.1", "0.0.0.0", "::", "localhost"]) {
      const domainFor = await resolveDomain({ domain: "auto", host }, logger);
      expect(domainFor(4321)).toBe("burrow.localhost:4321");
    }
    expect(warnings()).toEqual([]);
  });

  it("keeps a configured domain, and null, as they are", async () => {
    const { logger } = capture();
    expect((await resolveDomain({ domain: "sbx.example.com:3000", host: "10.1.2.3" }, logger))(3000)).toBe("sbx.example.com:3000");
    expect((await resolveDomain({ domain: null, host: "127.0.0.1" }, logger))(3000)).toBeNull();
  });

  it("advertises none, with a hint, where the local name does not lead to the server", async () => {
    const { logger, warnings } = capture();
    // Listening on another interface, or on a loopback address the name does not resolve to.
    expect((await resolveDomain({ domain: "auto", host: "10.1.2.3" }, logger))(3000)).toBeNull();
    expect((await resolveDomain({ domain: "auto", host: "127.0.0.2" }, logger))(3000)).toBeNull();
    expect(warnings()).toEqual([
      expect.stringContaining("set BURROW_DOMAIN to a name (with a wildcard DNS record)"),
      expect.stringContaining("install libnss-myhostname"),
    ]);
  });
});
