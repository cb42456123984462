// The original destination of a DNAT'ed connection, read from the kernel's conntrack table: a temporary nft table
// of this test's own DNATs loopback connections to 127.0.0.3:<port> to a listener on 127.0.0.1, and the listener
// finds where each was going, from the table and from the socket (SO_ORIGINAL_DST). The table is removed after.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { connect, createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { socketOriginalDestination } from "../src/egress/native-relay.js";
import { originalDestination } from "../src/egress/original-destination.js";

const TABLE = `burrowodst${randomBytes(3).toString("hex")}`;
const nft = (script: string) => execFileSync("nft", ["-f", "-"], { input: script });
let server: Server;
let port: number;
const accepted: Socket[] = [];
const waiting: ((s: Socket) => void)[] = [];

beforeAll(async () => {
  server = createServer((s) => {
    accepted.push(s);
    waiting.shift()?.(s);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
  nft(`add table ip ${TABLE}
add chain ip ${TABLE} out { type nat hook output priority -100; policy accept; }
add rule ip ${TABLE} out ip daddr 127.0.0.3 tcp dport { 4444, 5555 } dnat to 127.0.0.1:${port}
`);
});

afterAll(async () => {
  try {
    nft(`delete table ip ${TABLE}\n`);
  } finally {
    for (const s of accepted) s.destroy();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function arrive(toPort: number): Promise<{ client: Socket; at: Socket }> {
  const at = new Promise<Socket>((resolve) => waiting.push(resolve));
  const client = connect(toPort, "127.0.0.3");
  await new Promise((resolve) => client.once("connect", resolve));
  return { client, at: await at };
}

describe("originalDestination", () => {
  it("finds where each DNAT'ed connection was going", async () => {
    for (const to of [4444, 5555]) {
      const { client, at } = await arrive(to);
      const found = await originalDestination({ ip: at.remoteAddress!, port: at.remotePort! }, { ip: "127.0.0.1", port });
      expect(found).toEqual({ ip: "127.0.0.3", port: to });
      client.destroy();
    }
  });

  it("finds nothing for a connection that was not DNAT'ed to the listener, or without the procfs file", async () => {
    const direct = connect(port, "127.0.0.1");
    await new Promise((resolve) => direct.once("connect", resolve));
    const found = await originalDestination({ ip: "127.0.0.1", port: direct.localPort! }, { ip: "127.0.0.1", port });
    // Not DNAT'ed: the original destination is the listener itself.
    expect(found).toEqual({ ip: "127.0.0.1", port });
    expect(await originalDestination({ ip: "127.0.0.1", port: 1 }, { ip: "127.0.0.1", port })).toBeUndefined();
    expect(await originalDestination({ ip: "127.0.0.1", port: direct.localPort! }, { ip: "127.0.0.1", port }, "/nonexistent")).toBeUndefined();
    direct.destroy();
  });

  it("SO_ORIGINAL_DST (the relay addon) tells the same of the accepted socket, without reading the table", async () => {
    for (const to of [4444, 5555]) {
      const { client, at } = await arrive(to);
      expect(socketOriginalDestination(at)).toEqual({ ip: "127.0.0.3", port: to });
      client.destroy();
    }
    const accepted = new Promise<Socket>((resolve) => waiting.push(resolve));
    const direct = connect(port, "127.0.0.1");
    await new Promise((resolve) => direct.once("connect", resolve));
    // Not DNAT'ed: the listener itself, which the proxy never takes for an address its resolver gave.
    expect(socketOriginalDestination(await accepted)).toEqual({ ip: "127.0.0.1", port });
    direct.destroy();
  });
});
