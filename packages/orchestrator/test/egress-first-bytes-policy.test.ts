// What the egress proxy reads and how it judges, without sandboxes: the server name of real ClientHellos made by
// Node's TLS client (one record, split across TCP segments, none for an IP literal), the Host of HTTP/1 requests
// (refused when doubled or missing), and the verdicts of the rules (allow beats deny, wildcards, IP literals, names
// no entry names, the internet switch). The sandboxes' side is test/egress/domain-rules.test.ts.
import { createServer, type AddressInfo, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { judgeAddress, judgeHost, judgeName, nameResolves, type SandboxPolicy } from "../src/egress/egress-policy.js";
import { peekHttpHost, peekTlsServerName } from "../src/egress/first-bytes.js";
import { normalizeEgressRules } from "../src/network/egress-rules.js";

describe("first bytes", () => {
  let port: number;
  const receive: ((b: Buffer) => void)[] = [];
  const server = createServer((socket: Socket) => {
    let data = Buffer.alloc(0);
    const done = receive.shift()!;
    socket.on("data", (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      if (peekTlsServerName(data).state !== "more") {
        done(data);
        socket.destroy();
      }
    });
  });
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => server.close());

  /** The bytes a real TLS client sends first, for `servername`. */
  function clientHello(servername: string | undefined): Promise<Buffer> {
    const got = new Promise<Buffer>((resolve) => receive.push(resolve));
    const client = tlsConnect({ host: "127.0.0.1", port, ...(servername ? { servername } : {}), rejectUnauthorized: false });
    client.on("error", () => undefined);
    return got.finally(() => client.destroy());
  }

  it("reads the SNI of a real ClientHello, whole or a byte at a time, and none for an IP literal", async () => {
    const hello = await clientHello("Allowed.Test");
    expect(peekTlsServerName(hello)).toEqual({ state: "done", host: "allowed.test" });
    for (let i = 1; i < hello.length; i += 97) expect(peekTlsServerName(hello.subarray(0, i)).state).toBe("more");
    expect(peekTlsServerName(await clientHello(undefined))).toEqual({ state: "done", host: undefined });
    expect(peekTlsServerName(Buffer.from("GET / HTTP/1.1\r\n\r\n")).state).toBe("invalid");
  });

  it("reads the Host of an HTTP/1 request and refuses two, none, or garbage", () => {
    expect(peekHttpHost(Buffer.from("GET / HTTP/1.1\r\nHost: Allowed.test:8080\r\nAccept: */*\r\n"))).toEqual({ state: "more" });
    expect(peekHttpHost(Buffer.from("GET / HTTP/1.1\r\nhost: Allowed.test:8080\r\n\r\n"))).toEqual({ state: "done", host: "allowed.test" });
    expect(peekHttpHost(Buffer.from("GET / HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n")).state).toBe("invalid");
    expect(peekHttpHost(Buffer.from("GET / HTTP/1.1\r\nAccept: */*\r\n\r\n")).state).toBe("invalid");
    expect(peekHttpHost(Buffer.from("\x16\x03\x01 garbage\r\n\r\n")).state).toBe("invalid");
  });
});

describe("egress policy", () => {
  const policy = (allowOut: string[], denyOut: string[], internet = true): SandboxPolicy => ({ internet, rules: normalizeEgressRules({ allowOut, denyOut }) });

  it("allow beats deny, wildcards match below their domain only", () => {
    const p = policy(["a.w.test", "*.x.w.test"], ["a.w.test", "*.w.test"]);
    expect(judgeName(p, "A.w.test.")).toEqual({ allowed: true, rule: "a.w.test" });
    expect(judgeName(p, "z.y.x.w.test")).toEqual({ allowed: true, rule: "*.x.w.test" });
    expect(judgeName(p, "x.w.test")).toEqual({ allowed: false, rule: "*.w.test" });
    expect(judgeName(p, "w.test")).toBeUndefined();
    expect(judgeName(p, "xw.test")).toBeUndefined();
  });

  it("names no entry names resolve unless everything is denied; IP literals are judged as addresses", () => {
    expect(nameResolves(policy(["a.test"], ["0.0.0.0/0"]), "b.test")).toEqual({ allowed: false, rule: "ALL_TRAFFIC" });
    expect(nameResolves(policy(["a.test"], [], false), "b.test")).toEqual({ allowed: false, rule: "internet" });
    expect(nameResolves(policy(["a.test", "10.0.0.0/8"], ["0.0.0.0/0"]), "b.test").allowed).toBe(true);
    expect(nameResolves(policy([], ["c.test"]), "b.test").allowed).toBe(true);
    expect(judgeHost(policy(["a.test"], ["0.0.0.0/0"]), "203.0.113.20")).toEqual({ allowed: false, rule: "ALL_TRAFFIC" });
    expect(judgeAddress(policy(["203.0.113.16/28"], ["0.0.0.0/0"]), "203.0.113.20")).toEqual({ allowed: true, rule: "203.0.113.16/28" });
    expect(judgeAddress(policy([], ["203.0.113.20"]), "203.0.113.20")).toEqual({ allowed: false, rule: "203.0.113.20/32" });
    expect(judgeAddress(policy([], []), "203.0.113.20")).toEqual({ allowed: true, rule: "no rules" });
  });
});
