// Traffic to user ports inside a sandbox: Host-based routing (`<port>-<id>.<domain>`) and the gateway's answers
// for closed ports and killed sandboxes (SDK test sandbox/host, adapted: Node cannot resolve *.localhost, so the
// Host header is set by hand on a request to the server's own address).
import { request } from "node:http";
import { describe, expect } from "vitest";
import { burrowEnv, sandboxTest } from "./env.js";

function get(port: number, sandboxId: string): Promise<{ status: number; body: string }> {
  const base = new URL(burrowEnv().sandboxUrl);
  return new Promise((resolve, reject) => {
    const req = request({ host: base.hostname, port: base.port, path: "/", headers: { host: `${port}-${sandboxId}.localhost` } }, (res) => {
      let body = "";
      res.on("data", (c) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode!, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("ports", () => {
  sandboxTest("a server started in the sandbox is reachable by host routing", async ({ sandbox }) => {
    await sandbox.files.write("/home/user/www/index.html", "hello from sandbox");
    await sandbox.commands.run("cd /home/user/www && python3 -m http.server 8080", { background: true });
    let res = { status: 0, body: "" };
    for (let i = 0; i < 50 && res.status !== 200; i++) {
      res = await get(8080, sandbox.sandboxId);
      if (res.status !== 200) await new Promise((r) => setTimeout(r, 200));
    }
    expect(res).toEqual({ status: 200, body: "hello from sandbox" });
    expect(sandbox.getHost(8080)).toContain(`8080-${sandbox.sandboxId}`);
  });

  sandboxTest("closed port → 502, killed sandbox → 502 'The sandbox was not found'", async ({ sandbox }) => {
    expect((await get(8081, sandbox.sandboxId)).status).toBe(502);
    await sandbox.kill();
    const gone = await get(8080, sandbox.sandboxId);
    expect(gone.status).toBe(502);
    expect(JSON.parse(gone.body)).toEqual({ sandboxId: sandbox.sandboxId, message: "The sandbox was not found", code: 502 });
  });
});
