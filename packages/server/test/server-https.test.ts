// startServer's own port serves HTTPS beside HTTP with the state directory's CA, and advertises the local domain
// with the port it got; BURROW_TLS=false (tls: false) serves HTTP only.
import { readFileSync } from "node:fs";
import { request } from "node:https";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./helpers/test-server.js";

const servers: TestServer[] = [];
afterEach(async () => {
  for (const t of servers.splice(0)) await t.close();
});

function httpsGet(url: string, opts: { ca?: string; headers?: Record<string, string>; servername?: string }): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca: opts.ca, headers: opts.headers, servername: opts.servername, agent: false }, (res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => (body += chunk.toString()));
      res.on("end", () => resolve({ status: res.statusCode!, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("server HTTPS and domain", () => {
  it("answers the API over HTTPS on the same port, and advertises burrow.localhost:<port>", async () => {
    const t = await startTestServer();
    servers.push(t);
    const { port, caCertFile } = t.server;
    expect(caCertFile).toBe(join(t.stateDir, "tls", "ca.pem"));
    const ca = readFileSync(caCertFile!, "utf8");
    expect(t.server.config.domain).toBe(`burrow.localhost:${port}`);

    const headers = { "x-api-key": t.apiKey };
    expect(await httpsGet(`https://127.0.0.1:${port}/health`, { ca })).toEqual({ status: 200, body: '{"status":"ok"}' });
    const listed = await httpsGet(`https://localhost:${port}/v2/sandboxes`, { ca, headers });
    expect(listed.status).toBe(200);
    // Sandboxes carry the domain (what getHost() builds on).
    const created = await fetch(`${t.url}/sandboxes`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ templateID: "base" }),
    });
    expect(((await created.json()) as { domain: string }).domain).toBe(`burrow.localhost:${port}`);
    await expect(httpsGet(`https://127.0.0.1:${port}/health`, {})).rejects.toMatchObject({ code: "UNABLE_TO_VERIFY_LEAF_SIGNATURE" });
  });

  it("serves HTTP only with tls: false", async () => {
    const t = await startTestServer({ config: { tls: false } });
    servers.push(t);
    expect(t.server.caCertFile).toBeNull();
    expect((await fetch(`${t.url}/health`)).status).toBe(200);
    // A TLS ClientHello reaches the HTTP parser, which refuses it: no handshake.
    await expect(httpsGet(`https://127.0.0.1:${t.server.port}/health`, {})).rejects.toMatchObject({ code: expect.stringMatching(/^(ECONNRESET|EPROTO)$/) });
  });
});
