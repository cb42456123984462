// Kernel per-user budgets (inotify instances here; fanotify, message queues and namespaces work the same way) are
// charged, at the host's level, to the uid that owns a sandbox's user namespace. Each sandbox has its own owner,
// so one sandbox that uses up its budget leaves host root and every other sandbox theirs. What the kernel counts
// per host uid instead (pipe buffers) is separate too, since each sandbox runs as host uids of its own.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { FilesystemEventType, Sandbox, type CommandHandle, type FilesystemEvent } from "e2b";
import { sandboxInternals } from "../helpers/sandbox-internals.js";

const env = inject("burrow");
const opts = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl };
const EMFILE = 24;

// Opens inotify instances until the kernel refuses (as the uid given, else as itself), prints "<opened> <errno>"
// and keeps them open.
const FILL = `
import ctypes, os, sys, time
if len(sys.argv) > 1:
    uid = int(sys.argv[1]); os.setgroups([]); os.setgid(uid); os.setuid(uid)
libc = ctypes.CDLL(None, use_errno=True)
n = 0
while libc.inotify_init1(0) >= 0:
    n += 1
print(n, ctypes.get_errno(), flush=True)
time.sleep(3600)
`;

// Grows pipes to the largest size an unprivileged user may until the kernel refuses, then opens default pipes
// until a fresh one comes out shrunk (the user's pipe budget is spent); prints "<pipes> <size of the last one>"
// and keeps them all open.
const PIPES = `
import fcntl, os, time
F_SETPIPE_SZ, F_GETPIPE_SZ = 1031, 1032
big = int(open("/proc/sys/fs/pipe-max-size").read())
held = []
for _ in range(100000):
    r, w = os.pipe()
    held.append((r, w))
    try:
        fcntl.fcntl(w, F_SETPIPE_SZ, big)
    except OSError:
        break
for _ in range(1000):
    r, w = os.pipe()
    held.append((r, w))
    if fcntl.fcntl(w, F_GETPIPE_SZ) < 65536:
        break
print(len(held), fcntl.fcntl(held[-1][1], F_GETPIPE_SZ), flush=True)
time.sleep(3600)
`;

// A fresh pipe's size, and whether it can grow to the largest size an unprivileged user may.
const PIPE_PROBE = `
import fcntl, os
F_SETPIPE_SZ, F_GETPIPE_SZ = 1031, 1032
r, w = os.pipe()
size = fcntl.fcntl(w, F_GETPIPE_SZ)
try:
    fcntl.fcntl(w, F_SETPIPE_SZ, int(open("/proc/sys/fs/pipe-max-size").read())); grown = "grows"
except OSError:
    grown = "refused"
print(size, grown)
`;

function hostMaxInotifyInstances(): number {
  return Number(readFileSync("/proc/sys/user/max_inotify_instances", "utf8").trim());
}

function record(sandboxId: string): { usernsOwner?: number; hostUidBase?: number } {
  return JSON.parse(readFileSync(`${sandboxInternals(env.stateDir, sandboxId).dir}/sandbox.json`, "utf8")) as {
    usernsOwner?: number;
    hostUidBase?: number;
  };
}

async function until<T>(what: string, check: () => T | undefined, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("kernel budgets", () => {
  let a: Sandbox;
  let b: Sandbox;
  const fillers: CommandHandle[] = [];

  beforeAll(async () => {
    [a, b] = await Promise.all([
      Sandbox.create("base", { ...opts, metadata: { suite: "kernel-budgets" } }),
      Sandbox.create("base", { ...opts, metadata: { suite: "kernel-budgets" } }),
    ]);
    await a.files.write("/tmp/fill.py", FILL);
    await a.files.write("/tmp/pipes.py", PIPES);
  });

  afterAll(async () => {
    for (const filler of fillers) await filler.kill().catch(() => undefined);
    await a?.kill();
    await b?.kill();
  });

  /** Run a filler in sandbox A and wait for its "<a> <b>" line; it keeps what it took. */
  async function fill(user: "user" | "root", asUid?: number, script = "/tmp/fill.py"): Promise<[number, number]> {
    let out = "";
    const cmd = `python3 ${script}${asUid === undefined ? "" : ` ${asUid}`}`;
    fillers.push(await a.commands.run(cmd, { user, background: true, onStdout: (data) => void (out += data) }));
    const line = await until(`filler (${cmd}) to report`, () => (out.includes("\n") ? out.trim() : undefined));
    const [opened, errno] = line.split(" ").map(Number);
    return [opened ?? NaN, errno ?? NaN];
  }

  async function watchDelivers(sandbox: Sandbox, dir: string): Promise<void> {
    await sandbox.files.makeDir(dir);
    const events: FilesystemEvent[] = [];
    const handle = await sandbox.files.watchDir(dir, (event) => void events.push(event));
    try {
      await sandbox.files.write(`${dir}/ping.txt`, "ping");
      await until("the watch event", () =>
        events.some((e) => e.name === "ping.txt" && e.type === FilesystemEventType.CREATE) ? true : undefined,
      );
    } finally {
      await handle.stop();
    }
  }

  it("gives each sandbox a namespace owner and host uids of its own, and per-uid limits inside", async () => {
    const [recordA, recordB] = [record(a.sandboxId), record(b.sandboxId)];
    expect(recordA.usernsOwner).toBeGreaterThan(0);
    expect(recordB.usernsOwner).toBeGreaterThan(0);
    expect(recordA.usernsOwner).not.toBe(recordB.usernsOwner);
    expect(recordA.hostUidBase).not.toBe(recordB.hostUidBase);
    for (const [sandbox, rec] of [[a, recordA], [b, recordB]] as const) {
      const { stdout } = await sandbox.commands.run("cat /proc/self/uid_map");
      expect(stdout.trim().split(/\s+/).map(Number)).toEqual([0, rec.hostUidBase, 65536]);
    }
    const { stdout } = await a.commands.run("cat /proc/sys/user/max_inotify_instances", { user: "user" });
    expect(Number(stdout.trim())).toBe(Math.floor(hostMaxInotifyInstances() / 2));
  });

  it("a sandbox that uses up its inotify instances leaves host root and other sandboxes theirs", async () => {
    const host = hostMaxInotifyInstances();
    const perUid = Math.floor(host / 2);

    // The unprivileged user stops at the per-uid limit, which leaves sandbox root (envd) room to watch.
    expect(await fill("user")).toEqual([perUid, EMFILE]);
    await watchDelivers(a, "/tmp/watched-in-a");

    // Sandbox root and further uids then take the rest of what one host user may hold, until nothing is left.
    const [byRoot, rootErrno] = await fill("root");
    expect(byRoot).toBeGreaterThan(0);
    expect(rootErrno).toBe(EMFILE);
    expect((await fill("root", 1001))[1]).toBe(EMFILE);
    expect(await fill("root", 1002)).toEqual([0, EMFILE]);

    // Host root still creates inotify instances...
    const probe = "import ctypes; libc=ctypes.CDLL(None, use_errno=True); print('ok' if libc.inotify_init1(0) >= 0 else ctypes.get_errno())";
    expect(execFileSync("python3", ["-c", probe], { encoding: "utf8" }).trim()).toBe("ok");
    // ...and the other sandbox's envd still watches directories.
    await watchDelivers(b, "/tmp/watched-in-b");
  });

  // Linux counts pipe buffer pages per host uid; past pipe-user-pages-soft an unprivileged user's new pipes shrink
  // to two pages and cannot grow. Hosts without that limit have nothing to spend.
  it.skipIf(readFileSync("/proc/sys/fs/pipe-user-pages-soft", "utf8").trim() === "0")(
    "a sandbox that spends its pipe buffer budget leaves other sandboxes full-size pipes",
    async () => {
      const [pipes, freshInA] = await fill("root", undefined, "/tmp/pipes.py");
      expect(pipes).toBeGreaterThan(1);
      expect(freshInA).toBeLessThan(65536);
      const { stdout } = await b.commands.run(`python3 - <<'EOF'\n${PIPE_PROBE}\nEOF`, { user: "root" });
      expect(stdout.trim()).toBe("65536 grows");
    },
  );
});
