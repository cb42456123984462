// Edge cases across the SDK surface: odd file names, large outputs, concurrency, streams cut by a sandbox kill.
import { describe, expect } from "vitest";
import { CommandExitError, FileType, FilesystemEventType, InvalidArgumentError, Sandbox } from "e2b";
import { burrowEnv, sandboxTest, sdkOpts } from "./env.js";

async function until(predicate: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("edge cases: names and paths", () => {
  sandboxTest("spaces, unicode, quotes, percent signs and ? & # in file names", async ({ sandbox }) => {
    const names = ["with space.txt", "ünïcødé-✓.txt", "quote'\"s.txt", "100%25 sure.txt", "q?a&b#c=d.txt", "+plus+.txt"];
    for (const name of names) {
      const info = await sandbox.files.write(`odd/${name}`, `content of ${name}`);
      expect(info.name).toBe(name);
      expect(await sandbox.files.read(`odd/${name}`)).toBe(`content of ${name}`);
      expect((await sandbox.files.getInfo(`odd/${name}`)).name).toBe(name);
      const url = await sandbox.downloadUrl(`/home/user/odd/${name}`);
      expect(await (await fetch(url)).text()).toBe(`content of ${name}`);
    }
    expect((await sandbox.files.list("odd")).map((e) => e.name).sort()).toEqual([...names].sort());
    const shell = (await sandbox.commands.run("ls -1 odd")).stdout.trim().split("\n").sort();
    expect(shell).toEqual([...names].sort());
  });

  sandboxTest("~ paths, trailing slashes and redundant separators", async ({ sandbox }) => {
    await sandbox.files.write("~/tilde.txt", "t");
    expect(await sandbox.files.read("/home/user/tilde.txt")).toBe("t");
    await sandbox.files.makeDir("slashy");
    expect((await sandbox.files.getInfo("slashy/")).type).toBe(FileType.DIR);
    expect(await sandbox.files.read("/home//user/./tilde.txt")).toBe("t");
  });

  sandboxTest("makeDir over a file and rename onto an existing file", async ({ sandbox }) => {
    await sandbox.files.write("afile", "x");
    await expect(sandbox.files.makeDir("afile")).rejects.toBeInstanceOf(InvalidArgumentError);
    await sandbox.files.write("src1", "new");
    await sandbox.files.write("dst1", "old");
    await sandbox.files.rename("src1", "dst1");
    expect(await sandbox.files.read("dst1")).toBe("new");
  });

  sandboxTest("Range requests on /files", async ({ sandbox }) => {
    await sandbox.files.write("/home/user/range.txt", "0123456789");
    const url = await sandbox.downloadUrl("/home/user/range.txt");
    const res = await fetch(url, { headers: { Range: "bytes=2-5" } });
    expect(res.status).toBe(206);
    expect(await res.text()).toBe("2345");
    expect(res.headers.get("content-range")).toBe("bytes 2-5/10");
  });
});

describe("edge cases: volume", () => {
  sandboxTest("a large stdout (4 MB) arrives complete and in order", async ({ sandbox }) => {
    const r = await sandbox.commands.run("seq 1 500000");
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines.length).toBe(500_000);
    expect(lines[0]).toBe("1");
    expect(lines[499_999]).toBe("500000");
  });

  sandboxTest("stdout and stderr stay separate when interleaved", async ({ sandbox }) => {
    const r = await sandbox.commands.run("for i in $(seq 1 200); do echo o$i; echo e$i >&2; done");
    expect(r.stdout.trim().split("\n")).toEqual(Array.from({ length: 200 }, (_, i) => `o${i + 1}`));
    expect(r.stderr.trim().split("\n")).toEqual(Array.from({ length: 200 }, (_, i) => `e${i + 1}`));
  });

  sandboxTest("a 50 MB file round-trips byte-exact", async ({ sandbox }) => {
    await sandbox.commands.run("head -c 52428800 /dev/urandom > /tmp/big.bin");
    const sum = (await sandbox.commands.run("sha256sum /tmp/big.bin")).stdout.split(" ")[0];
    const data = await sandbox.files.read("/tmp/big.bin", { format: "bytes" });
    expect(data.length).toBe(52_428_800);
    await sandbox.files.write("/tmp/big2.bin", data.buffer as ArrayBuffer);
    expect((await sandbox.commands.run("sha256sum /tmp/big2.bin")).stdout.split(" ")[0]).toBe(sum);
  }, 120_000);

  sandboxTest("20 concurrent commands and file writes", async ({ sandbox }) => {
    const runs = await Promise.all(Array.from({ length: 20 }, (_, i) => sandbox.commands.run(`echo ${i}`)));
    expect(runs.map((r) => r.stdout)).toEqual(Array.from({ length: 20 }, (_, i) => `${i}\n`));
    await Promise.all(Array.from({ length: 20 }, (_, i) => sandbox.files.write(`conc/${i}.txt`, String(i))));
    expect((await sandbox.files.list("conc")).length).toBe(20);
  });

  sandboxTest("exit codes and the end event: signals, 255, errors", async ({ sandbox }) => {
    const e1 = (await sandbox.commands.run("exit 255").catch((e: unknown) => e)) as CommandExitError;
    expect(e1).toBeInstanceOf(CommandExitError);
    expect(e1.exitCode).toBe(255);
    expect(e1.error).toMatch(/exit status 255/);
    const e2 = (await sandbox.commands.run("kill -TERM $$").catch((e: unknown) => e)) as CommandExitError;
    expect(e2).toBeInstanceOf(CommandExitError);
    expect(e2.error).toMatch(/signal: terminated/);
  });
});

describe("edge cases: many sandboxes", () => {
  sandboxTest("8 concurrent creates: distinct ids and addresses, each runs and is killed", async ({ spawn }) => {
    const sandboxes = await Promise.all(Array.from({ length: 8 }, (_, i) => spawn({ metadata: { i: String(i) } })));
    expect(new Set(sandboxes.map((s) => s.sandboxId)).size).toBe(8);
    const ips = await Promise.all(sandboxes.map(async (s) => (await s.commands.run("hostname -I")).stdout.trim()));
    expect(new Set(ips).size).toBe(8);
    await Promise.all(sandboxes.map((s) => s.kill()));
    expect(await Promise.all(sandboxes.map((s) => s.isRunning()))).toEqual(Array(8).fill(false));
  }, 120_000);
});

describe("edge cases: sandbox killed under open streams", () => {
  sandboxTest("watchDir, pty and a background command all end when the sandbox is killed", async ({ spawn }) => {
    const sbx = await spawn();
    try {
      await sbx.files.makeDir("w");
      let watchExit: unknown = "open";
      await sbx.files.watchDir("w", () => undefined, { onExit: (err) => void (watchExit = err) });
      const term = await sbx.pty.create({ cols: 80, rows: 24, onData: () => undefined });
      const ptyDone = term.wait().then(
        () => "resolved",
        (e: unknown) => e,
      );
      const bg = await sbx.commands.run("sleep 100", { background: true });
      const bgDone = bg.wait().then(
        () => "resolved",
        (e: unknown) => e,
      );
      await Sandbox.kill(sbx.sandboxId, sdkOpts());
      expect(await ptyDone).toBeInstanceOf(Error);
      expect(await bgDone).toBeInstanceOf(Error);
      await until(() => watchExit !== "open", "the watch to end");
      expect(watchExit).toBeInstanceOf(Error);
    } finally {
      await sbx.kill().catch(() => undefined);
    }
  });

  sandboxTest("envd routes of a killed sandbox answer the proxy's 502 JSON", async ({ spawn }) => {
    const sbx = await spawn();
    await sbx.kill();
    const res = await fetch(`${burrowEnv().sandboxUrl}/health`, { headers: { "E2b-Sandbox-Id": sbx.sandboxId } });
    expect(res.status).toBe(502);
    expect(await res.json()).toEqual({ sandboxId: sbx.sandboxId, message: "The sandbox was not found", code: 502 });
    await expect(sbx.files.read("/etc/hostname")).rejects.toThrow();
  });
});

describe("edge cases: watch", () => {
  sandboxTest("many quick writes are all reported", async ({ sandbox }) => {
    await sandbox.files.makeDir("burst");
    const names = new Set<string>();
    const handle = await sandbox.files.watchDir("burst", (e) => {
      if (e.type === FilesystemEventType.CREATE) names.add(e.name);
    });
    await sandbox.commands.run("for i in $(seq 1 100); do echo $i > burst/f$i; done");
    await until(() => names.size === 100, "100 create events");
    await handle.stop();
  });
});
