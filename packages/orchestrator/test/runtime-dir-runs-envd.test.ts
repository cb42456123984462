// The envd runtime directory: the host's node with its own libraries and loader, run from the
// read-only /.burrow mount inside a real sandbox, independent of the template's libc.
import { readFile, readdir, stat, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Code } from "@burrow/protocol";
import { buildRuntimeDir, parseLdd, runtimeCommand } from "../src/rootfs/index.js";
import { ensureTestRootfs } from "./helpers/base-rootfs.js";
import { POLL } from "./helpers/poll.js";
import { SandboxFixture } from "./helpers/sandbox-fixture.js";

// Stands in for envd: serves HTTP, talks to itself, opens a PTY through the node-pty addon, then
// writes a marker with what it saw.
const FAKE_ENVD = String.raw`
const http = require("node:http");
const { writeFileSync } = require("node:fs");
const pty = require("node-pty");
const server = http.createServer((req, res) => res.end("pong " + process.env.GREETING));
server.listen(4900, "127.0.0.1", () => {
  http.get("http://127.0.0.1:4900/", (res) => {
    let body = "";
    res.on("data", (c) => (body += c));
    res.on("end", () => {
      const term = pty.spawn("/bin/sh", ["-c", "echo pty-ok; tty"], { name: "xterm", cols: 80, rows: 24 });
      let out = "";
      term.onData((d) => (out += d));
      term.onExit(() => {
        writeFileSync("/tmp/envd-marker", JSON.stringify({ version: process.version, uid: process.getuid(), body, pty: out }));
      });
    });
  });
});
`;

const nodePtyDir = dirname(createRequire(import.meta.url).resolve("node-pty/package.json"));

describe("runtime dir", () => {
  let fx: SandboxFixture;
  let runtime: string;

  beforeAll(async () => {
    fx = new SandboxFixture(await ensureTestRootfs());
    const dir = await fx.dir();
    const bundle = join(dir, "fake-envd.cjs");
    await writeFile(bundle, FAKE_ENVD);
    runtime = join(dir, "runtime");
    await buildRuntimeDir({ outDir: runtime, files: { bundle, nativeModules: [{ name: "node-pty", dir: nodePtyDir }] } });
    fx.runtime = runtime;
  });
  afterAll(async () => {
    await fx.cleanup();
  });

  it("holds node, its libraries, the loader, the bundle and the addons", async () => {
    const lib = await readdir(join(runtime, "lib"));
    expect(lib).toEqual(expect.arrayContaining(["ld.so", "libc.so.6", "libstdc++.so.6"]));
    expect((await stat(join(runtime, "bin/node"))).mode & 0o777).toBe(0o755);
    expect(await readFile(join(runtime, "envd/envd.cjs"), "utf8")).toBe(FAKE_ENVD);
    expect((await stat(join(runtime, "envd/node_modules/node-pty/build/Release/pty.node"))).isFile()).toBe(true);
    await expect(buildRuntimeDir({ outDir: runtime, files: { bundle: "/x", nativeModules: [] } })).rejects.toMatchObject({
      code: Code.AlreadyExists,
    });
  });

  it("runs envd's node from /.burrow inside a sandbox, with HTTP and a PTY", async () => {
    const sb = await fx.launch({ command: runtimeCommand(), env: { GREETING: "hi" } });
    const marker = await vi.waitFor(() => readFile(join(sb.dirs.upper, "tmp/envd-marker"), "utf8"), POLL).catch(async (err: Error) => {
      throw new Error(`${err.message}; sandbox log:\n${await readFile(sb.dirs.log, "utf8").catch(() => "")}`);
    });
    const seen = JSON.parse(marker) as { version: string; uid: number; body: string; pty: string };
    expect(seen.version).toBe(process.version);
    expect(seen.uid).toBe(0);
    expect(seen.body).toBe("pong hi");
    expect(seen.pty).toContain("pty-ok");
    expect(seen.pty).toMatch(/\/dev\/pts\/\d+/);
  });

  it("parses ldd output", () => {
    const r = parseLdd(
      [
        "\tlinux-vdso.so.1 (0x00007ffd)",
        "\tlibdl.so.2 => /lib/x86_64-linux-gnu/libdl.so.2 (0x00007f1)",
        "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f2)",
        "\t/lib64/ld-linux-x86-64.so.2 (0x00007f3)",
      ].join("\n"),
    );
    expect(r).toEqual({
      libs: ["/lib/x86_64-linux-gnu/libdl.so.2", "/lib/x86_64-linux-gnu/libc.so.6"],
      loader: "/lib64/ld-linux-x86-64.so.2",
    });
  });
});
