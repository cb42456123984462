// The egress proxy's header relay (egress/header-relay.ts) on loopback, without sandboxes: a client connection whose
// first bytes were already read is relayed to a real HTTP server with the rule's headers replacing the client's,
// on every request of a keep-alive connection; a later request for another Host gets 421 and never reaches the
// upstream; a value that cannot be resolved gets 502 and never reaches it either; hosts without rules are left to
// the caller (relayIfTransformed answers false, nothing read).
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { connect, createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { relayIfTransformed, type EgressInterceptor } from "../src/egress/header-relay.js";

let upstream: HttpServer;
let upstreamPort: number;
const seenByUpstream: string[][] = [];

function interceptor(headers: Record<string, string> | undefined | Error): EgressInterceptor {
  return {
    upstreamCa: [],
    sandboxCaPem: "",
    certificateFor: () => Promise.reject(new Error("no TLS here")),
    headersFor: async () => {
      if (headers instanceof Error) throw headers;
      return headers;
    },
  };
}

/** A listener that hands each connection, with its first chunk already read, to relayIfTransformed. */
async function relayListener(ic: EgressInterceptor, onRelayed: (relayed: boolean) => void): Promise<Server> {
  const server = createServer((client: Socket) => {
    client.once("data", (first: Buffer) => {
      client.pause();
      void relayIfTransformed(ic, client, first, { sandboxId: "s", host: "api.test", ip: "127.0.0.1", port: upstreamPort, tls: false }, () => undefined).then((r) => {
        onRelayed(r);
        if (!r) client.end("HTTP/1.1 299 Spliced\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}

/** Raw HTTP/1.1 exchange: each request on the same connection once the previous answer is complete; what came back. */
function exchange(port: number, requests: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let got = "";
    let sent = 1;
    socket.on("data", (d) => {
      got += d.toString("latin1");
      // Every answer here has a Content-Length: complete when the last one's body is all there.
      const answers = got.split(/(?=HTTP\/1\.1 \d{3} )/);
      const last = answers.at(-1)!;
      const head = last.indexOf("\r\n\r\n");
      const length = Number(/content-length: (\d+)/i.exec(last)?.[1] ?? "0");
      if (head < 0 || Buffer.byteLength(last.slice(head + 4), "latin1") < length) return;
      if (answers.length < requests.length) socket.write(requests[sent++]!);
      else socket.end();
    });
    socket.on("error", reject);
    socket.on("close", () => resolve(got));
    socket.write(requests[0]!);
  });
}

const get = (host: string, extra = "") => `GET /x HTTP/1.1\r\nHost: ${host}\r\nAuthorization: from-client\r\n${extra}\r\n`;

describe("egress header relay", () => {
  beforeAll(async () => {
    upstream = createHttpServer((req, res) => {
      seenByUpstream.push(req.rawHeaders);
      res.end(JSON.stringify(req.rawHeaders));
    });
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
    upstreamPort = (upstream.address() as { port: number }).port;
  });

  afterAll(async () => {
    upstream.closeAllConnections();
    await new Promise((resolve) => upstream.close(resolve));
  });

  it("replaces the client's header on every request of a keep-alive connection, keeping the others as sent", async () => {
    seenByUpstream.length = 0;
    const server = await relayListener(interceptor({ Authorization: "Bearer injected" }), () => undefined);
    try {
      const got = await exchange((server.address() as { port: number }).port, [get("api.test", "X-Mine: Kept\r\n"), get("api.test:80")]);
      expect(got.match(/HTTP\/1\.1 200/g)?.length).toBe(2);
      expect(seenByUpstream).toHaveLength(2);
      for (const raw of seenByUpstream) {
        expect(raw.filter((_, i) => i % 2 === 0 && raw[i]!.toLowerCase() === "authorization").length).toBe(1);
        expect(raw[raw.indexOf("Authorization") + 1]).toBe("Bearer injected");
        expect(raw).not.toContain("from-client");
      }
      expect(seenByUpstream[0]).toEqual(expect.arrayContaining(["X-Mine", "Kept"]));
    } finally {
      server.close();
    }
  });

  it("a request for another Host on the same connection gets 421 and never reaches the upstream", async () => {
    seenByUpstream.length = 0;
    const server = await relayListener(interceptor({ Authorization: "Bearer injected" }), () => undefined);
    try {
      const got = await exchange((server.address() as { port: number }).port, [get("api.test"), get("other.test")]);
      expect(got).toMatch(/HTTP\/1\.1 200[\s\S]*HTTP\/1\.1 421/);
      expect(seenByUpstream).toHaveLength(1);
    } finally {
      server.close();
    }
  });

  it("a value that cannot be resolved is a 502 and nothing reaches the upstream", async () => {
    seenByUpstream.length = 0;
    const server = await relayListener(interceptor(new Error("secret 'gone' not found")), () => undefined);
    try {
      const got = await exchange((server.address() as { port: number }).port, [get("api.test")]);
      expect(got).toMatch(/^HTTP\/1\.1 502[\s\S]*secret 'gone' not found/);
      expect(seenByUpstream).toHaveLength(0);
    } finally {
      server.close();
    }
  });

  it("a host without rules is left to the caller", async () => {
    let relayed: boolean | undefined;
    const server = await relayListener(interceptor(undefined), (r) => (relayed = r));
    try {
      expect(await exchange((server.address() as { port: number }).port, [get("api.test")])).toMatch(/^HTTP\/1\.1 299/);
      expect(relayed).toBe(false);
    } finally {
      server.close();
    }
  });
});
