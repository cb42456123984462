// Reading /proc and /sys through the SDK and the gateway, as the Python SDK does it (pooled HTTP/1.1 keep-alive
// connections): their real content, and a connection that still works for the next request. Directory sizes as
// E2B reports them (never 0). SDK tests: sandbox/files/{read,info}.
import { Agent, request, type IncomingHttpHeaders } from "node:http";
import { afterAll, describe, expect } from "vitest";
import { FileType } from "e2b";
import { burrowEnv, sandboxTest } from "./env.js";

describe("files: pseudo files", () => {
  sandboxTest("the SDK reads /proc and /sys files with their real content", async ({ sandbox }) => {
    const cpuinfo = await sandbox.files.read("/proc/cpuinfo");
    expect(cpuinfo).toContain("processor");
    const inSandbox = (await sandbox.commands.run("cat /proc/cpuinfo")).stdout;
    expect(cpuinfo.split("\n").filter((l) => l.startsWith("processor"))).toEqual(
      inSandbox.split("\n").filter((l) => l.startsWith("processor")),
    );
    // the sandbox's own pid namespace: its pid 1 as the sandbox sees it
    expect(await sandbox.files.read("/proc/1/comm")).toBe((await sandbox.commands.run("cat /proc/1/comm")).stdout);
    const online = await sandbox.files.read("/sys/devices/system/cpu/online");
    expect(online).toBe((await sandbox.commands.run("cat /sys/devices/system/cpu/online")).stdout);
    expect(await sandbox.files.read("/proc/self/status")).toMatch(/^Name:/);
  });

  describe("through the gateway on one keep-alive connection", () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    afterAll(() => agent.destroy());

    sandboxTest("GET /files of /proc/cpuinfo, then more requests on the same socket", async ({ sandbox }) => {
      const detail = await fetch(`${burrowEnv().apiUrl}/sandboxes/${sandbox.sandboxId}`, { headers: { "X-API-KEY": burrowEnv().apiKey } });
      const token = ((await detail.json()) as { envdAccessToken: string }).envdAccessToken;
      const sockets = new Set<unknown>();
      const get = (path: string, method = "GET") =>
        new Promise<{ status: number; headers: IncomingHttpHeaders; body: string }>((resolve, reject) => {
          const req = request(`${burrowEnv().sandboxUrl}/files?${new URLSearchParams({ path, username: "user" })}`, {
            agent, method, headers: { "E2b-Sandbox-Id": sandbox.sandboxId, "X-Access-Token": token },
          }, (res) => {
            let body = "";
            res.setEncoding("utf8");
            res.on("data", (c: string) => (body += c));
            res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body }));
            res.on("error", reject);
          });
          req.on("socket", (s) => sockets.add(s));
          req.on("error", reject);
          req.end();
        });

      await sandbox.files.write("/home/user/after.txt", "after the proc read");
      const cpuinfo = await get("/proc/cpuinfo");
      // what used to fail with a reset: the next request on that same socket
      const after = await get("/home/user/after.txt");
      expect(cpuinfo.status).toBe(200);
      expect(cpuinfo.headers["content-length"]).toBeUndefined();
      expect(cpuinfo.body).toContain("processor");
      expect(after).toMatchObject({ status: 200, body: "after the proc read" });
      expect(after.headers["content-length"]).toBe(String("after the proc read".length));
      const sys = await get("/sys/devices/system/cpu/online");
      expect(sys.body).toMatch(/^[0-9,-]+\n$/);
      const head = await get("/proc/meminfo", "HEAD");
      expect(head).toMatchObject({ status: 200, body: "" });
      expect((await get("/proc/meminfo")).body).toContain("MemTotal:");
      expect(sockets.size).toBe(1);
    });
  });
});

describe("files: directory sizes", () => {
  sandboxTest("a directory reports its size in blocks, as ext4 does: never 0, even when empty", async ({ sandbox }) => {
    await sandbox.files.makeDir("emptydir");
    const empty = await sandbox.files.getInfo("emptydir");
    expect(empty.type).toBe(FileType.DIR);
    expect(empty.size).toBeGreaterThan(0);
    expect(empty.size % 4096).toBe(0);
    for (let i = 0; i < 300; i++) await sandbox.files.makeDir(`bigdir/entry-with-a-rather-long-name-${i}`);
    const big = await sandbox.files.getInfo("bigdir");
    expect(big.size).toBeGreaterThanOrEqual(empty.size);
    expect(big.size % 4096).toBe(0);
    const listedDirs = (await sandbox.files.list("/home/user")).filter((x) => x.type === FileType.DIR);
    expect(listedDirs.map((d) => d.name)).toEqual(expect.arrayContaining(["emptydir", "bigdir"]));
    for (const d of listedDirs) expect(d.size).toBeGreaterThan(0);
    // files keep their exact byte size
    await sandbox.files.write("five.txt", "12345");
    expect((await sandbox.files.getInfo("five.txt")).size).toBe(5);
  });
});
