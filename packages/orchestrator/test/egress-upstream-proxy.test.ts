// The egress proxy's way out through a user's proxy, against real proxies on loopback (test/helpers/test-proxies.mjs)
// and a real HTTP server behind them: SOCKS5 and HTTP CONNECT, with and without credentials, wrong credentials and
// a dead proxy failing closed with their codes, and the addresses the API takes (bad ones named in the message).
import { createServer, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectThroughProxy, parseUpstreamProxy, UpstreamProxyError } from "../src/egress/upstream-proxy.js";
import { startHttpConnectProxy, startSocks5Proxy, type TestProxy } from "../../../test/helpers/test-proxies.mjs";

const LOOPBACK = "127.0.0.1";
let target: Server;
let targetPort: number;
let socks: TestProxy;
let socksOpen: TestProxy;
let http: TestProxy;

/** One GET over an established connection; the whole answer as text. */
function get(socket: Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    socket.setEncoding("utf8");
    socket.on("data", (d: string) => (text += d));
    socket.once("end", () => resolve(text));
    socket.once("error", reject);
    socket.resume();
    socket.write(`GET / HTTP/1.1\r\nHost: target\r\nConnection: close\r\n\r\n`);
  });
}

beforeAll(async () => {
  target = createServer((req, res) => res.end(`target saw ${req.socket.remoteAddress}:${req.socket.remotePort}`));
  await new Promise<void>((resolve) => target.listen(0, LOOPBACK, resolve));
  targetPort = (target.address() as AddressInfo).port;
  socks = await startSocks5Proxy({ host: LOOPBACK, username: "alice", password: "s3cret" });
  socksOpen = await startSocks5Proxy({ host: LOOPBACK });
  http = await startHttpConnectProxy({ host: LOOPBACK, username: "bob", password: "pw" });
});

afterAll(async () => {
  await Promise.all([socks?.close(), socksOpen?.close(), http?.close()]);
  target?.closeAllConnections();
  await new Promise((resolve) => target.close(resolve));
});

describe("connectThroughProxy", () => {
  const opts = { timeoutMs: 5000 };

  it("SOCKS5 with user/password: the connection reaches the target through the proxy", async () => {
    const socket = await connectThroughProxy(parseUpstreamProxy(`socks5://${LOOPBACK}:${socks.port}`, "alice", "s3cret"), LOOPBACK, LOOPBACK, targetPort, opts);
    expect(await get(socket)).toMatch(/^HTTP\/1\.1 200 [\s\S]*target saw 127\.0\.0\.1:\d+$/);
    expect(socks.log.at(-1)).toBe(`CONNECT ${LOOPBACK}:${targetPort}`);
  });

  it("SOCKS5 without credentials (E2B's bare host:port)", async () => {
    const socket = await connectThroughProxy(parseUpstreamProxy(`${LOOPBACK}:${socksOpen.port}`), LOOPBACK, LOOPBACK, targetPort, opts);
    expect(await get(socket)).toMatch(/target saw/);
    expect(socksOpen.log).toEqual([`CONNECT ${LOOPBACK}:${targetPort}`]);
  });

  it("HTTP CONNECT with Proxy-Authorization", async () => {
    const socket = await connectThroughProxy(parseUpstreamProxy(`http://${LOOPBACK}:${http.port}`, "bob", "pw"), LOOPBACK, LOOPBACK, targetPort, opts);
    expect(await get(socket)).toMatch(/target saw/);
    expect(http.log.at(-1)).toBe(`CONNECT ${LOOPBACK}:${targetPort}`);
  });

  it("wrong credentials fail closed with proxy_auth_failed, for both kinds", async () => {
    const before = [socks.log.length, http.log.length];
    await expect(connectThroughProxy(parseUpstreamProxy(`socks5://${LOOPBACK}:${socks.port}`, "alice", "nope"), LOOPBACK, LOOPBACK, targetPort, opts)).rejects.toMatchObject({
      code: "proxy_auth_failed",
    });
    await expect(connectThroughProxy(parseUpstreamProxy(`http://${LOOPBACK}:${http.port}`, "bob", "nope"), LOOPBACK, LOOPBACK, targetPort, opts)).rejects.toMatchObject({
      code: "proxy_auth_failed",
    });
    // Missing credentials where the proxy wants them: refused the same way.
    await expect(connectThroughProxy(parseUpstreamProxy(`http://${LOOPBACK}:${http.port}`), LOOPBACK, LOOPBACK, targetPort, opts)).rejects.toBeInstanceOf(UpstreamProxyError);
    expect(socks.log.slice(before[0])).toEqual(["AUTH FAILED"]);
    expect(http.log.slice(before[1])).toEqual(["AUTH FAILED", "AUTH FAILED"]);
  });

  it("a proxy that is not there, or cannot reach the destination, fails closed", async () => {
    const dead = await startSocks5Proxy({ host: LOOPBACK });
    const deadPort = dead.port;
    await dead.close();
    await expect(connectThroughProxy(parseUpstreamProxy(`${LOOPBACK}:${deadPort}`), LOOPBACK, LOOPBACK, targetPort, opts)).rejects.toMatchObject({ code: "proxy_unreachable" });
    await expect(connectThroughProxy(parseUpstreamProxy(`${LOOPBACK}:${socksOpen.port}`), LOOPBACK, LOOPBACK, deadPort, opts)).rejects.toMatchObject({ code: "proxy_refused" });
    await expect(connectThroughProxy(parseUpstreamProxy(`http://${LOOPBACK}:${http.port}`, "bob", "pw"), LOOPBACK, LOOPBACK, deadPort, opts)).rejects.toMatchObject({ code: "proxy_refused" });
  });
});

describe("parseUpstreamProxy", () => {
  it("takes socks5://, http:// and bare host:port (SOCKS5), names and IPv4 addresses", () => {
    expect(parseUpstreamProxy("socks5://proxy.example.com:1080", "u", "p")).toEqual({ protocol: "socks5", host: "proxy.example.com", port: 1080, username: "u", password: "p" });
    expect(parseUpstreamProxy("HTTP://198.51.100.7:3128")).toEqual({ protocol: "http", host: "198.51.100.7", port: 3128 });
    expect(parseUpstreamProxy("198.51.100.7:1080")).toEqual({ protocol: "socks5", host: "198.51.100.7", port: 1080 });
  });

  it.each([
    ["https://proxy.example.com:443", /scheme 'https'/],
    ["socks4://proxy.example.com:1080", /scheme 'socks4'/],
    ["proxy.example.com", /expected socks5:\/\/host:port/],
    ["proxy.example.com:0", /port 0/],
    ["proxy.example.com:65536", /port 65536/],
    ["user:pw@proxy.example.com:1080", /expected/],
    ["bad_host!:1080", /is not an IPv4 address or a host name/],
  ])("refuses %s, naming it", (address, why) => {
    expect(() => parseUpstreamProxy(address)).toThrow(new RegExp(`'${address.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}'`));
    expect(() => parseUpstreamProxy(address)).toThrow(why);
  });

  it("refuses a password without a username and credentials over 255 bytes", () => {
    expect(() => parseUpstreamProxy("p.example.com:1080", undefined, "pw")).toThrow(/password needs a username/);
    expect(() => parseUpstreamProxy("p.example.com:1080", "x".repeat(256))).toThrow(/username: 1 to 255 bytes/);
  });
});
