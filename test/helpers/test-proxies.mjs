// Small forward proxies for egress tests (plain JavaScript, so that they can also run inside a test's namespace with
// `node`): a SOCKS5 server (RFC 1928 CONNECT only, IPv4 and domain destinations, RFC 1929 user/password when
// credentials are given) and an HTTP CONNECT proxy (Basic Proxy-Authorization when credentials are given). Each
// records what it was asked for in `log` (`CONNECT <host>:<port>`, `AUTH FAILED`), so a test can tell that traffic
// went through it.
import { createServer as createHttpServer } from "node:http";
import { connect, createServer } from "node:net";

/** @param {{ host: string, port?: number, username?: string, password?: string, localAddress?: string }} opts */
export async function startSocks5Proxy(opts) {
  const log = [];
  const sockets = new Set();
  const server = createServer((client) => {
    sockets.add(client);
    client.once("close", () => sockets.delete(client));
    client.on("error", () => client.destroy());
    let buf = Buffer.alloc(0);
    let stage = "greeting";
    const onData = (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      for (;;) {
        if (stage === "greeting") {
          if (buf.length < 2 || buf.length < 2 + buf[1]) return;
          const methods = [...buf.subarray(2, 2 + buf[1])];
          buf = buf.subarray(2 + buf[1]);
          const wanted = opts.username !== undefined ? 2 : 0;
          if (buf.length === 0 && !methods.includes(wanted)) return void client.end(Buffer.from([5, 0xff]));
          client.write(Buffer.from([5, wanted]));
          stage = wanted === 2 ? "auth" : "request";
        } else if (stage === "auth") {
          if (buf.length < 2) return;
          const ul = buf[1];
          if (buf.length < 3 + ul || buf.length < 3 + ul + buf[2 + ul]) return;
          const user = buf.subarray(2, 2 + ul).toString();
          const pass = buf.subarray(3 + ul, 3 + ul + buf[2 + ul]).toString();
          buf = buf.subarray(3 + ul + buf[2 + ul]);
          if (user !== opts.username || pass !== opts.password) {
            log.push("AUTH FAILED");
            return void client.end(Buffer.from([1, 1]));
          }
          client.write(Buffer.from([1, 0]));
          stage = "request";
        } else {
          if (buf.length < 5) return;
          let host;
          let end;
          if (buf[3] === 1) [host, end] = [buf.length >= 10 ? [...buf.subarray(4, 8)].join(".") : undefined, 10];
          else if (buf[3] === 3) [host, end] = [buf.length >= 7 + buf[4] ? buf.subarray(5, 5 + buf[4]).toString() : undefined, 7 + buf[4]];
          else return void client.end(Buffer.from([5, 8, 0, 1, 0, 0, 0, 0, 0, 0]));
          if (host === undefined) return;
          const port = buf.readUInt16BE(end - 2);
          const rest = buf.subarray(end);
          client.off("data", onData);
          log.push(`CONNECT ${host}:${port}`);
          const upstream = connect({ host, port, ...(opts.localAddress ? { localAddress: opts.localAddress } : {}) });
          upstream.on("error", () => {
            client.end(Buffer.from([5, 5, 0, 1, 0, 0, 0, 0, 0, 0]));
          });
          upstream.once("connect", () => {
            const reply = Buffer.from([5, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
            client.write(reply);
            if (rest.length > 0) upstream.write(rest);
            client.pipe(upstream);
            upstream.pipe(client);
            client.once("close", () => upstream.destroy());
            upstream.once("close", () => client.destroy());
          });
          return;
        }
      }
    };
    client.on("data", onData);
  });
  return listen(server, opts, log, sockets);
}

/** @param {{ host: string, port?: number, username?: string, password?: string, localAddress?: string }} opts */
export async function startHttpConnectProxy(opts) {
  const log = [];
  const sockets = new Set();
  const server = createHttpServer((_req, res) => {
    res.statusCode = 405;
    res.end("CONNECT only\n");
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.once("close", () => sockets.delete(s));
  });
  server.on("connect", (req, client, head) => {
    client.on("error", () => client.destroy());
    const expected = opts.username !== undefined ? `Basic ${Buffer.from(`${opts.username}:${opts.password ?? ""}`).toString("base64")}` : undefined;
    if (expected !== undefined && req.headers["proxy-authorization"] !== expected) {
      log.push("AUTH FAILED");
      return void client.end('HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="test"\r\nContent-Length: 0\r\n\r\n');
    }
    const [host, port] = [req.url.slice(0, req.url.lastIndexOf(":")), Number(req.url.slice(req.url.lastIndexOf(":") + 1))];
    log.push(`CONNECT ${host}:${port}`);
    const upstream = connect({ host, port, ...(opts.localAddress ? { localAddress: opts.localAddress } : {}) });
    upstream.on("error", () => client.end("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n"));
    upstream.once("connect", () => {
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length > 0) upstream.write(head);
      client.pipe(upstream);
      upstream.pipe(client);
      client.once("close", () => upstream.destroy());
      upstream.once("close", () => client.destroy());
    });
  });
  return listen(server, opts, log, sockets);
}

function listen(server, opts, log, sockets) {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, opts.host, () => {
      resolve({
        port: server.address().port,
        log,
        close: () =>
          new Promise((done) => {
            for (const s of sockets) s.destroy();
            server.close(() => done(undefined));
          }),
      });
    });
  });
}
