// GET /files of files whose size stat cannot tell: procfs and sysfs files report 0 and FIFOs have none. Their
// real bytes come with chunked encoding, and the keep-alive connection stays usable for the next request (as
// the Python SDK's pooled HTTP/1.1 connections need). Regular files keep their Content-Length, Range and gzip.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { Agent, request, type IncomingHttpHeaders } from "node:http";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { setupEnvd } from "./helpers/envd-fixture.js";

let env: Awaited<ReturnType<typeof setupEnvd>>;
// One socket for every request of this file: a response that overran its length would break the next one.
const agent = new Agent({ keepAlive: true, maxSockets: 1 });
const sockets = new Set<unknown>();

beforeAll(async () => {
  env = await setupEnvd();
});
afterAll(async () => {
  agent.destroy();
  await env?.cleanup();
});

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

function get(path: string, headers: Record<string, string> = {}, method = "GET"): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(`${env.envd.url}/files?${new URLSearchParams({ path })}`, {
      agent, method, headers: { "X-Access-Token": env.token, ...headers },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("socket", (s) => sockets.add(s));
    req.on("error", reject);
    req.end();
  });
}

describe("pseudo files", () => {
  test("/proc/cpuinfo: real content, chunked, and the same socket serves the next request", async () => {
    const r = await get("/proc/cpuinfo");
    expect(r.status).toBe(200);
    expect(r.headers["content-length"]).toBeUndefined();
    expect(r.headers["transfer-encoding"]).toBe("chunked");
    expect(r.headers["accept-ranges"]).toBeUndefined();
    expect(r.body.toString()).toContain("processor");
    const next = await get("/proc/version");
    expect(next.status).toBe(200);
    expect(next.body.toString()).toBe(readFileSync("/proc/version", "utf8"));
    expect(sockets.size).toBe(1);
  });

  test("a sysfs attribute (stat says one page), a procfs file larger than one read, gzip, Range", async () => {
    const sys = await get("/sys/devices/system/cpu/online");
    expect(sys.headers["content-length"]).toBeUndefined();
    expect(sys.body.toString()).toBe(readFileSync("/sys/devices/system/cpu/online", "utf8"));
    const big = await get("/proc/kallsyms");
    expect(big.body.length).toBeGreaterThan(64 * 1024);
    expect(big.body.equals(readFileSync("/proc/kallsyms"))).toBe(true);
    const gz = await get("/proc/cpuinfo", { "Accept-Encoding": "gzip" });
    expect(gz.headers["content-encoding"]).toBe("gzip");
    expect(gunzipSync(gz.body).toString()).toContain("processor");
    // Range is ignored for an unknown length: the whole content
    const ranged = await get("/proc/version", { Range: "bytes=0-3" });
    expect(ranged.status).toBe(200);
    expect(ranged.body.toString()).toBe(readFileSync("/proc/version", "utf8"));
    expect(sockets.size).toBe(1);
  });

  test("an unreadable pseudo file is a JSON error before any byte, and the connection survives", async () => {
    // /proc/self/mem opens but its first read (address 0, unmapped) fails with EIO
    const mem = await get("/proc/self/mem");
    expect(mem.status).toBe(400);
    expect(JSON.parse(mem.body.toString())).toEqual({ code: 400, message: expect.stringContaining("cannot be read") });
    expect((await get("/proc/version")).status).toBe(200);
    expect(sockets.size).toBe(1);
  });

  test("HEAD of a pseudo file: 200, no length, no body; then a GET on the same socket", async () => {
    const h = await get("/proc/cpuinfo", {}, "HEAD");
    expect(h.status).toBe(200);
    expect(h.headers["content-length"]).toBeUndefined();
    expect(h.body.length).toBe(0);
    expect((await get("/proc/cpuinfo")).body.toString()).toContain("processor");
    expect(sockets.size).toBe(1);
  });
});

describe("FIFOs and regular files", () => {
  test("a FIFO reads like cat: it waits for a writer and streams what it writes until it closes", async () => {
    const fifo = join(env.dir, "pipe");
    execFileSync("mkfifo", [fifo]);
    const reply = get(fifo);
    // The request is waiting on the FIFO (no writer yet); envd still serves other requests meanwhile.
    await new Promise((r) => setTimeout(r, 200));
    const health = await fetch(`${env.envd.url}/health`);
    expect(health.status).toBe(204);
    execFileSync("sh", ["-c", `exec 3>"${fifo}"; echo first >&3; sleep 0.2; echo second >&3`]);
    const r = await reply;
    expect(r.status).toBe(200);
    expect(r.headers["transfer-encoding"]).toBe("chunked");
    expect(r.body.toString()).toBe("first\nsecond\n");
    expect(sockets.size).toBe(1);
  });

  test("a client that gives up on a FIFO nobody writes leaves no descriptor open in envd", async () => {
    const fifo = join(env.dir, "abandoned");
    execFileSync("mkfifo", [fifo]);
    const opened = () => readdirSync(`/proc/${env.envd.pid}/fd`).filter((fd) => {
      try {
        return readlinkSync(`/proc/${env.envd.pid}/fd/${fd}`) === fifo;
      } catch {
        return false;
      }
    }).length;
    const abort = new AbortController();
    const res = await fetch(`${env.envd.url}/files?${new URLSearchParams({ path: fifo })}`, {
      headers: { "X-Access-Token": env.token }, signal: abort.signal,
    });
    expect(res.status).toBe(200);
    expect(opened()).toBe(1);
    abort.abort();
    const deadline = Date.now() + 5000;
    while (opened() > 0) {
      if (Date.now() > deadline) throw new Error("envd still holds the FIFO open");
      await new Promise((r) => setTimeout(r, 20));
    }
  });

  test("empty and non-empty regular files, ranges and gzip keep working on the same socket", async () => {
    const emptyFile = join(env.user.home, "empty.txt");
    writeFileSync(emptyFile, "");
    const e = await get(emptyFile);
    expect(e.status).toBe(200);
    expect(e.body.length).toBe(0);
    const file = join(env.user.home, "digits.txt");
    writeFileSync(file, "0123456789");
    const full = await get(file);
    expect(full.headers["content-length"]).toBe("10");
    expect(full.body.toString()).toBe("0123456789");
    const part = await get(file, { Range: "bytes=3-5" });
    expect(part.status).toBe(206);
    expect(part.body.toString()).toBe("345");
    const gz = await get(file, { "Accept-Encoding": "gzip" });
    expect(gunzipSync(gz.body).toString()).toBe("0123456789");
    expect(sockets.size).toBe(1);
  });
});
