// Plain HTTP and HTTPS on one port (tls/same-port-tls.ts), against a real node:http server and a certificate from
// a real local CA (openssl): requests, keep-alive, pipelining, bodies, upgrades, bad and silent clients, close().
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, request as httpRequest, type Server } from "node:http";
import { request as httpsRequest } from "node:https";
import { connect as netConnect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect as tlsConnect, type TLSSocket } from "node:tls";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { acceptTlsOnSamePort, ensureLocalCa, issueServerCertificate, LOCAL_CERTIFICATE_NAMES, type LocalCa, type SamePortTlsOptions } from "../src/tls/index.js";

let stateDir: string;
let ca: LocalCa;
let certificate: { key: string; cert: string };
beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), "burrow-same-port-tls-"));
  ca = await ensureLocalCa(stateDir);
  certificate = await issueServerCertificate(ca, LOCAL_CERTIFICATE_NAMES);
});
afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** An HTTP server that answers `<encrypted> <method> <url> <body length>` and accepts TLS on the same port. */
async function startServer(opts: Partial<SamePortTlsOptions> = {}): Promise<{ server: Server; port: number; clientErrors: Error[] }> {
  const server = createServer((req, res) => {
    let length = 0;
    req.on("data", (chunk: Buffer) => (length += chunk.length));
    req.on("end", () => res.end(`${(req.socket as TLSSocket).encrypted === true} ${req.method} ${req.url} ${length}`));
  });
  server.on("upgrade", (req, socket: Socket, head: Buffer) => {
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nupgrade: echo\r\nconnection: upgrade\r\nx-encrypted: ${(socket as TLSSocket).encrypted === true}\r\n\r\n`);
    socket.write(head);
    socket.pipe(socket);
  });
  const clientErrors: Error[] = [];
  acceptTlsOnSamePort(server, { ...certificate, handshakeTimeoutMs: 600_000, onClientError: (err) => clientErrors.push(err), ...opts });
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { server, port: (server.address() as { port: number }).port, clientErrors };
}

function get(url: string, opts: { ca?: string; servername?: string; method?: string; body?: Buffer } = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const send = url.startsWith("https:") ? httpsRequest : httpRequest;
    const req = send(url, { method: opts.method ?? "GET", ca: opts.ca, servername: opts.servername, agent: false }, (res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => (body += chunk.toString()));
      res.on("end", () => resolve({ status: res.statusCode!, body }));
    });
    req.on("error", reject);
    req.end(opts.body);
  });
}

/**
 * Write `data` on a raw connection and collect what comes back until the server closes it, or until `enough`.
 * The client does not half-close: TLS has no half-close, a client's close_notify ends the connection.
 */
async function exchange(socket: Socket | TLSSocket, data: string, enough?: (received: string) => boolean): Promise<string> {
  let received = "";
  const closed = once(socket, "close");
  socket.on("error", () => undefined);
  socket.on("data", (chunk: Buffer) => {
    received += chunk.toString();
    if (enough?.(received)) socket.destroy();
  });
  socket.write(data);
  await closed;
  return received;
}

describe("same-port TLS", () => {
  it("serves plain HTTP and HTTPS on one port, to the same handler", async () => {
    const { port } = await startServer();
    expect(await get(`http://127.0.0.1:${port}/a`)).toEqual({ status: 200, body: "false GET /a 0" });
    expect(await get(`https://127.0.0.1:${port}/b`, { ca: ca.certPem })).toEqual({ status: 200, body: "true GET /b 0" });
    // SNI names under *.burrow.localhost (getHost URLs) and localhost are in the certificate.
    expect(await get(`https://127.0.0.1:${port}/c`, { ca: ca.certPem, servername: "8000-abc123.burrow.localhost" })).toEqual({ status: 200, body: "true GET /c 0" });
    expect(await get(`https://127.0.0.1:${port}/d`, { ca: ca.certPem, servername: "localhost" })).toEqual({ status: 200, body: "true GET /d 0" });
  });

  it("keeps request bodies whole and pipelined requests in order, over both", async () => {
    const { port } = await startServer();
    const body = Buffer.alloc(3 * 1024 * 1024, 7);
    expect(await get(`http://127.0.0.1:${port}/up`, { method: "POST", body })).toEqual({ status: 200, body: `false POST /up ${body.length}` });
    expect(await get(`https://127.0.0.1:${port}/up`, { method: "POST", body, ca: ca.certPem })).toEqual({ status: 200, body: `true POST /up ${body.length}` });

    const pipelined = "GET /1 HTTP/1.1\r\nhost: x\r\n\r\nGET /2 HTTP/1.1\r\nhost: x\r\n\r\nGET /3 HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";
    const plain = await exchange(netConnect(port, "127.0.0.1"), pipelined);
    expect(plain.match(/false GET \/\d/g)).toEqual(["false GET /1", "false GET /2", "false GET /3"]);
    const secure = tlsConnect({ port, host: "127.0.0.1", ca: ca.certPem, servername: "localhost" });
    await once(secure, "secureConnect");
    expect((await exchange(secure, pipelined)).match(/true GET \/\d/g)).toEqual(["true GET /1", "true GET /2", "true GET /3"]);
  });

  it("hands upgrades (WebSockets) over TLS to the server's upgrade handler", async () => {
    const { port } = await startServer();
    const socket = tlsConnect({ port, host: "127.0.0.1", ca: ca.certPem, servername: "8000-abc.burrow.localhost" });
    await once(socket, "secureConnect");
    const received = await exchange(socket, "GET /ws HTTP/1.1\r\nhost: x\r\nupgrade: echo\r\nconnection: upgrade\r\n\r\nping", (r) => r.endsWith("ping"));
    expect(received).toMatch(/^HTTP\/1\.1 101 /);
    expect(received).toContain("x-encrypted: true");
    expect(received.endsWith("\r\n\r\nping")).toBe(true);
  });

  it("refuses a client that does not trust the CA, and a name outside the certificate, and keeps serving", async () => {
    const { port, clientErrors } = await startServer();
    await expect(get(`https://127.0.0.1:${port}/`)).rejects.toMatchObject({ code: "UNABLE_TO_VERIFY_LEAF_SIGNATURE" });
    await expect(get(`https://127.0.0.1:${port}/`, { ca: ca.certPem, servername: "example.com" })).rejects.toMatchObject({
      code: "ERR_TLS_CERT_ALTNAME_INVALID",
    });
    // A whole TLS record that is not a ClientHello is a failed handshake (the server alerts and closes), not a crash.
    const garbage = netConnect(port, "127.0.0.1");
    const closed = once(garbage, "close");
    garbage.on("error", () => undefined).resume();
    garbage.write(Buffer.from([0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5]));
    await closed;
    await expect.poll(() => clientErrors.length).toBeGreaterThan(0);
    expect(await get(`https://127.0.0.1:${port}/ok`, { ca: ca.certPem })).toEqual({ status: 200, body: "true GET /ok 0" });
    expect(await get(`http://127.0.0.1:${port}/ok`)).toEqual({ status: 200, body: "false GET /ok 0" });
  });

  it("closes connections that send nothing, or stop in the handshake, after the handshake timeout", async () => {
    const { port } = await startServer({ handshakeTimeoutMs: 200 });
    const silent = netConnect(port, "127.0.0.1");
    // Half a ClientHello: a TLS record header announcing more than is sent.
    const halfHandshake = netConnect(port, "127.0.0.1", () => halfHandshake.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01])));
    await Promise.all([once(silent, "close"), once(halfHandshake, "close")]);
    expect(await get(`http://127.0.0.1:${port}/after`)).toEqual({ status: 200, body: "false GET /after 0" });
  });

  it("admits every connection as it is accepted, before its first byte, and sees it close whether TLS or not", async () => {
    const open = new Set<Socket>();
    let refuseNext = false;
    const { port } = await startServer({
      admit: (socket) => {
        if (refuseNext) {
          socket.end("HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
          socket.resume(); // read to the client's end, so that the socket closes (the server's sockets allow half-open)
          return false;
        }
        open.add(socket);
        socket.once("close", () => open.delete(socket));
        return true;
      },
    });
    const silent = netConnect(port, "127.0.0.1");
    await expect.poll(() => open.size).toBe(1);
    expect(await get(`https://127.0.0.1:${port}/x`, { ca: ca.certPem })).toEqual({ status: 200, body: "true GET /x 0" });
    expect(await get(`http://127.0.0.1:${port}/y`)).toEqual({ status: 200, body: "false GET /y 0" });
    // Both requests' connections (agent: false, so closed after the answer) are gone again; the silent one stays
    // until it leaves without having sent a byte.
    await expect.poll(() => open.size).toBe(1);
    refuseNext = true;
    const refused = await exchange(netConnect(port, "127.0.0.1"), "GET /z HTTP/1.1\r\nhost: x\r\n\r\n");
    expect(refused).toMatch(/^HTTP\/1\.1 503 /);
    silent.destroy();
    await expect.poll(() => open.size).toBe(0);
  });

  it("close() does not wait for connections still on their first byte or handshake", async () => {
    const { server, port } = await startServer();
    const silent = netConnect(port, "127.0.0.1");
    const halfHandshake = netConnect(port, "127.0.0.1", () => halfHandshake.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00])));
    await Promise.all([once(silent, "connect"), once(halfHandshake, "connect")]);
    await new Promise((resolve) => setTimeout(resolve, 50)); // let the server accept both
    servers.splice(servers.indexOf(server), 1);
    // With a handshake timeout of 10 minutes, close() would outlast the test's timeout if it waited for them.
    await new Promise((resolve) => server.close(resolve));
    await Promise.all([once(silent, "close"), once(halfHandshake, "close")].map((p) => p.catch(() => undefined)));
    expect(silent.destroyed && halfHandshake.destroyed).toBe(true);
  });
});
