// Real sandboxes on the real base rootfs: identity, isolation, lock-down and lifecycle of
// burrow-sandbox. Needs root, overlayfs and user namespaces (the project's target machines).
import { execFileSync } from "node:child_process";
import { mkdir, readdir, readFile, readlink, rmdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { DEFAULT_UID_RANGES_BASE, DEFAULT_USERNS_OWNERS } from "../src/config.js";
import { isSandboxInitAlive, LaunchError, readProcStat } from "../src/launcher/index.js";
import { ensureTestRootfs, TEST_UID_BASE } from "./helpers/base-rootfs.js";
import { POLL } from "./helpers/poll.js";
import { isRunning, makeMiniRuntime, mountsUnder, processTree, SandboxFixture } from "./helpers/sandbox-fixture.js";

// Syscall probes, x86_64 numbers. Each prints the errno (0 = success) so the test sees which
// layer refused: EPERM from seccomp, ESRCH from the pid namespace, ENOSYS for clone3/io_uring.
const PROBE = String.raw`
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
def err(r):
    return 0 if r >= 0 else ctypes.get_errno()
def sc(nr, *a):
    ctypes.set_errno(0)
    return err(libc.syscall(ctypes.c_long(nr), *a))
host_pid = int(sys.argv[1])
ptrace = libc.ptrace
ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
r = {}
r["getpid"] = sc(39)
ctypes.set_errno(0); r["mount"] = err(libc.mount(b"none", b"/mnt", b"tmpfs", 0, None))
ctypes.set_errno(0); r["umount2"] = err(libc.umount2(b"/proc", 2))
ctypes.set_errno(0); r["unshare_user"] = err(libc.unshare(0x10000000))
ctypes.set_errno(0); r["unshare_mnt"] = err(libc.unshare(0x00020000))
r["setns"] = sc(308, -1, 0)
r["keyctl"] = sc(250, 0, ctypes.c_long(-3), 0)
r["add_key"] = sc(248, b"user", b"k", b"v", 1, ctypes.c_long(-3))
r["bpf"] = sc(321, 0, None, 0)
r["perf_event_open"] = sc(298, None, 0, -1, -1, 0)
r["open_by_handle_at"] = sc(304, -1, None, 0)
r["clone3"] = sc(435, None, 0)
r["io_uring_setup"] = sc(425, 1, None)
r["clone_newns"] = sc(56, 0x00020000 | 17, None, None, None, 0)
ctypes.set_errno(0); r["ptrace_host_pid"] = err(ptrace(16, host_pid, None, None))
pid = os.fork()
if pid == 0:
    os._exit(0 if ptrace(0, 0, None, None) == 0 else 1)
r["ptrace_traceme_child"] = os.waitpid(pid, 0)[1]
print(json.dumps(r))
`;

// Opens inotify instances until the kernel refuses, as uid 0, 1000 and 1001 in turn (each in a child that keeps
// its instances open), and prints {uid: [opened, errno]}.
const FILL_INOTIFY = String.raw`
import ctypes, json, os, time
libc = ctypes.CDLL(None, use_errno=True)
res = {}
for uid in (0, 1000, 1001):
    r, w = os.pipe()
    if os.fork() == 0:
        os.close(r)
        if uid:
            os.setgroups([]); os.setgid(uid); os.setuid(uid)
        n = 0
        while libc.inotify_init1(0) >= 0:
            n += 1
        os.write(w, json.dumps([n, ctypes.get_errno()]).encode())
        os.close(w)
        time.sleep(3600)
        os._exit(0)
    os.close(w)
    res[uid] = json.loads(os.read(r, 100))
    os.close(r)
print(json.dumps(res))
`;

/** The host uid owning the user namespace of `pid`, as the kernel says (NS_GET_OWNER_UID). */
function namespaceOwner(pid: number): number {
  const py = "import fcntl,os,struct,sys; fd=os.open(sys.argv[1],os.O_RDONLY); print(struct.unpack('I',fcntl.ioctl(fd,0xb704,bytes(4)))[0])";
  const out = execFileSync("python3", ["-c", py, `/proc/${pid}/ns/user`], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  return Number(out.trim());
}

/** Whether host root (this process's uid) can still create an inotify instance. */
function hostRootCanInotify(): boolean {
  const py = "import ctypes; libc=ctypes.CDLL(None, use_errno=True); print('ok' if libc.inotify_init1(0) >= 0 else ctypes.get_errno())";
  return execFileSync("python3", ["-c", py], { encoding: "utf8" }).trim() === "ok";
}

async function hostUserLimit(name: string): Promise<number> {
  return Number((await readFile(`/proc/sys/user/${name}`, "utf8")).trim());
}

/** The processes of a sandbox whose command is `sleep infinity & exec sleep infinity`, once both sleeps run. */
function bothSleeps(init: number): Promise<number[]> {
  return vi.waitFor(async () => {
    const tree = await processTree(init);
    expect(tree.length, "the init and its two sleeps").toBeGreaterThanOrEqual(3);
    return tree;
  }, POLL);
}

describe("burrow-sandbox", () => {
  let fx: SandboxFixture;
  let lower: string;
  let hostMarker: string;

  beforeAll(async () => {
    lower = await ensureTestRootfs();
    fx = new SandboxFixture(lower);
    const dir = await fx.dir();
    fx.runtime = await makeMiniRuntime(dir);
    // A host file outside the rootfs that the sandbox must not see.
    hostMarker = join(dir, "host-marker");
    await writeFile(hostMarker, "secret");
  });
  afterAll(async () => {
    await fx.cleanup();
  });

  it("runs as root shifted to a host uid range of its own, in its own user, pid, uts, net and mount namespaces", async () => {
    const { out, sandbox } = await fx.run(
      [
        "echo uid_map=$(cat /proc/self/uid_map)",
        "echo gid_map=$(cat /proc/self/gid_map)",
        "echo id=$(id -u):$(id -g):$(id -G)",
        "echo init=$(tr '\\0' ' ' < /proc/1/cmdline)",
        "echo hostname=$(hostname)",
        "echo links=$(ls /sys/class/net | tr '\\n' ' ')",
        "echo loflags=$(cat /sys/class/net/lo/flags)",
        "echo timer_list=$(wc -c < /proc/timer_list)",
        "(echo 1 > /proc/sys/vm/drop_caches) 2>&1 | grep -q 'Read-only' && echo proc_sys=ro || echo proc_sys=rw",
        `echo host_marker=$(test -e ${hostMarker} && echo visible || echo hidden)`,
        `kill -0 ${process.pid} 2>/dev/null && echo hostpid=visible || echo hostpid=hidden`,
        "echo pids=$(ls /proc | grep -E '^[0-9]+$' | sort -n | tr '\\n' ' ')",
        "grep -E '^(Seccomp|NoNewPrivs|CapBnd):' /proc/self/status | tr -d '\\t'",
      ].join("\n"),
      { hostname: "box-42" },
    );
    const { base, count } = DEFAULT_USERNS_OWNERS;
    const hostUid = sandbox.hostUidBase;
    expect(hostUid).toBe(DEFAULT_UID_RANGES_BASE + (sandbox.usernsOwner - base) * 65536);
    expect(hostUid).toBeLessThan(DEFAULT_UID_RANGES_BASE + count * 65536);
    expect(out).toMatch(new RegExp(`^uid_map= *0 ${hostUid} 65536$`, "m"));
    expect(out).toMatch(new RegExp(`^gid_map= *0 ${hostUid} 65536$`, "m"));
    expect(out).toMatch(/^id=0:0:0$/m);
    expect(out).toMatch(/^init=burrow-init\s*$/m);
    expect(out).toMatch(/^hostname=box-42$/m);
    expect(out).toMatch(/^links=lo\s*$/m);
    expect(out).toMatch(/^timer_list=0$/m); // masked: the host's has every CPU's timers
    expect(out).toMatch(/^proc_sys=ro$/m);
    expect(out).toMatch(/^loflags=0x9$/m); // IFF_UP | IFF_LOOPBACK: 127.0.0.1 works without host help
    expect(out).toMatch(/^host_marker=hidden$/m);
    expect(out).toMatch(/^hostpid=hidden$/m);
    const pids = /^pids=(.*)$/m.exec(out)?.[1]?.trim().split(" ").map(Number) ?? [];
    expect(pids[0]).toBe(1);
    expect(Math.max(...pids)).toBeLessThan(100);
    expect(out).toMatch(/^Seccomp:2$/m);
    expect(out).toMatch(/^NoNewPrivs:0$/m);
    // CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID SETUID SETPCAP NET_BIND_SERVICE NET_RAW SYS_CHROOT AUDIT_WRITE SETFCAP
    expect(out).toMatch(/^CapBnd:00000000a00425fb$/m);

    // Host side: the init and everything under it run as the sandbox's own shifted uid.
    const tree = await processTree(sandbox.pid);
    expect(tree.length).toBeGreaterThanOrEqual(2);
    for (const pid of tree) {
      const status = await readFile(`/proc/${pid}/status`, "utf8");
      expect(status).toMatch(new RegExp(`^Uid:\\s+${hostUid}\\s+${hostUid}\\s+${hostUid}\\s+${hostUid}$`, "m"));
    }
    // Nothing of the sandbox is mounted on the host.
    expect(await mountsUnder(sandbox.dirs.root)).toEqual([]);
    expect(await readdir(sandbox.dirs.merged)).toEqual([]);
  });

  it("refuses mount, namespace, keyring, bpf and host-ptrace syscalls", async () => {
    const { out } = await fx.run(`python3 - ${process.pid} <<'EOF'\n${PROBE}\nEOF`);
    const r = JSON.parse(out.trim().split("\n").pop() ?? "{}") as Record<string, number>;
    const EPERM = 1, ESRCH = 3, ENOSYS = 38;
    expect(r).toEqual({
      getpid: 0,
      mount: EPERM,
      umount2: EPERM,
      unshare_user: EPERM,
      unshare_mnt: EPERM,
      setns: EPERM,
      keyctl: EPERM,
      add_key: EPERM,
      bpf: EPERM,
      perf_event_open: EPERM,
      open_by_handle_at: EPERM,
      clone3: ENOSYS,
      io_uring_setup: ENOSYS,
      clone_newns: EPERM,
      // The host pid does not exist in the sandbox's pid namespace.
      ptrace_host_pid: ESRCH,
      // Tracing inside the sandbox stays allowed (gdb/strace); the namespaces confine it.
      ptrace_traceme_child: 0,
    });
  });

  it("writes land in the upper dir owned by the canonical shifted ids, whatever the sandbox's range; the runtime is read-only", async () => {
    const { out, sandbox } = await fx.run(
      [
        "echo root > /etc/by-root",
        "su user -c 'echo user > /home/user/by-user'",
        "cat /.burrow/hello.txt",
        "touch /.burrow/new 2>&1 || echo runtime-write-refused",
        "echo sudo=$(su user -c 'sudo -n id -u' 2>/dev/null)",
        "echo mounts=$(awk '{print $2}' /proc/self/mounts | tr '\\n' ' ')",
      ].join("\n"),
    );
    expect(out).toContain("hello from the runtime");
    expect(out).toContain("Read-only file system");
    expect(out).toContain("runtime-write-refused");
    expect(out).toMatch(/^sudo=0$/m);
    const byRoot = await stat(join(sandbox.dirs.upper, "etc/by-root"));
    expect([byRoot.uid, byRoot.gid]).toEqual([TEST_UID_BASE, TEST_UID_BASE]);
    const byUser = await stat(join(sandbox.dirs.upper, "home/user/by-user"));
    expect([byUser.uid, byUser.gid]).toEqual([TEST_UID_BASE + 1000, TEST_UID_BASE + 1000]);
    // The lower layer is untouched.
    await expect(stat(join(lower, "etc/by-root"))).rejects.toThrow();
    const mounts = /^mounts=(.*)$/m.exec(out)?.[1]?.trim().split(" ") ?? [];
    expect(mounts).toEqual(expect.arrayContaining(["/", "/proc", "/sys", "/dev", "/dev/pts", "/dev/shm", "/.burrow"]));
    expect(mounts.some((m) => m.includes("oldroot"))).toBe(false);
  });

  it("with noNewPrivileges, setuid sudo no longer works", async () => {
    const { out } = await fx.run(
      "grep NoNewPrivs /proc/self/status | tr -d '\\t'; su user -c 'sudo -n true' >/dev/null 2>&1 && echo sudo=ok || echo sudo=refused",
      { noNewPrivileges: true },
    );
    expect(out).toMatch(/^NoNewPrivs:1$/m);
    expect(out).toMatch(/^sudo=refused$/m);
  });

  it("outlives the launcher and disappears completely when its init is killed", async () => {
    const sb = await fx.launch({ command: ["/bin/sh", "-c", "sleep infinity & exec sleep infinity"] });
    // launchSandbox resolved, so the launcher has exited; the init was reparented away from us.
    const status = await readFile(`/proc/${sb.pid}/status`, "utf8");
    const ppid = Number(/^PPid:\s+(\d+)$/m.exec(status)?.[1]);
    expect(ppid).not.toBe(process.pid);
    expect(isSandboxInitAlive(sb.pid, sb.startTime)).toBe(true);
    expect(isSandboxInitAlive(sb.pid, `${sb.startTime}1`)).toBe(false);
    const tree = await bothSleeps(sb.pid);

    process.kill(sb.pid, "SIGKILL");
    await expect.poll(() => tree.filter(isRunning), { ...POLL, message: "the tree to be gone" }).toEqual([]);
    expect(isSandboxInitAlive(sb.pid, sb.startTime)).toBe(false);
    expect(await mountsUnder(sb.dirs.root)).toEqual([]);
    expect(await readdir(sb.dirs.merged)).toEqual([]);
  });

  it("stops everything on SIGTERM to the init", async () => {
    const sb = await fx.launch({ command: ["/bin/sh", "-c", "sleep infinity & exec sleep infinity"], stopGraceMs: 5000 });
    const tree = await bothSleeps(sb.pid);
    process.kill(sb.pid, "SIGTERM");
    await expect.poll(() => tree.filter(isRunning), { ...POLL, message: "the tree to be gone" }).toEqual([]);
    expect(await readFile(sb.dirs.log, "utf8")).toContain("stopping: SIGTERM to all");
  });

  it("restarts the command when it dies and reaps orphans", async () => {
    const sb = await fx.launch({
      command: ["/bin/sh", "-c", "(sleep 0.05 &) ; echo run >> /tmp/runs; exit 3"],
      env: { FOO: "bar" },
    });
    const runs = await vi.waitFor(async () => {
      const t = await readFile(join(sb.dirs.upper, "tmp/runs"), "utf8");
      expect(t.split("\n").filter((l) => l === "run").length, "runs so far").toBeGreaterThanOrEqual(3);
      return t;
    }, POLL);
    expect(runs).toContain("run");
    const log = await readFile(sb.dirs.log, "utf8");
    expect(log).toContain("exited with 3");
    expect(log).toContain("restarted /bin/sh");
    // Orphaned sleeps were reaped by the init: no zombies linger under it.
    await expect
      .poll(async () => (await processTree(sb.pid)).filter((p) => readProcStat(p)?.state === "Z"), { ...POLL, message: "zombies under the init" })
      .toEqual([]);
  });

  it("starts inside the given cgroup", async () => {
    // A throwaway cgroup2 directory (no controllers needed), removed again below.
    const cg = `/sys/fs/cgroup/unified/burrow-launcher-test-${process.pid}-${Date.now()}`;
    await mkdir(cg);
    try {
      const sb = await fx.launch({ command: ["/bin/sh", "-c", "exec sleep infinity"], cgroups: [cg] });
      const members = (await readFile(join(cg, "cgroup.procs"), "utf8")).trim().split("\n").map(Number);
      expect(members).toContain(sb.pid);
      // Seen from the host, the init's unified-hierarchy cgroup is that directory.
      const inside = await readFile(`/proc/${sb.pid}/cgroup`, "utf8");
      expect(inside).toMatch(new RegExp(`^0::/burrow-launcher-test-`, "m"));
      await fx.kill(sb);
    } finally {
      await expect.poll(async () => (await readFile(join(cg, "cgroup.procs"), "utf8")).trim(), { ...POLL, message: "the cgroup to be empty" }).toBe("");
      await rmdir(cg);
    }
  });

  it("passes only the given environment plus a default PATH", async () => {
    const { out } = await fx.run("env | sort", { env: { FOO: "bar baz", EMPTY: "" } });
    expect(out.trim().split("\n").filter((l) => !l.startsWith("PWD=") && !l.startsWith("SHLVL=") && !l.startsWith("_="))).toEqual([
      "EMPTY=",
      "FOO=bar baz",
      "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    ]);
  });

  it("has its user namespace owned by a leased unprivileged host uid, a different one per live sandbox", async () => {
    const script = ["max_inotify_instances", "max_inotify_watches", "max_user_namespaces", "max_net_namespaces"]
      .map((name) => `echo ${name}=$(cat /proc/sys/user/${name})`)
      .join("\n");
    const hostInotify = await hostUserLimit("max_inotify_instances");
    const hostWatches = await hostUserLimit("max_inotify_watches");
    const [a, b] = await Promise.all([fx.run(script), fx.run(script)]);
    const { base, count } = DEFAULT_USERNS_OWNERS;
    for (const { sandbox } of [a, b]) {
      expect(sandbox.usernsOwner).toBeGreaterThanOrEqual(base);
      expect(sandbox.usernsOwner).toBeLessThan(base + count);
      expect(namespaceOwner(sandbox.pid)).toBe(sandbox.usernsOwner);
      // The host-wide lease names the init, so no other launcher hands out this uid while it lives.
      expect(await readlink(`/run/burrow/userns-owners/${sandbox.usernsOwner}`)).toBe(String(sandbox.pid));
    }
    expect(a.sandbox.usernsOwner).not.toBe(b.sandbox.usernsOwner);
    expect(a.sandbox.hostUidBase).not.toBe(b.sandbox.hostUidBase);
    // Inside, each uid gets half the sandbox's inotify share and a few namespaces; the host's own limits stay.
    expect(a.out).toMatch(new RegExp(`^max_inotify_instances=${Math.floor(hostInotify / 2)}$`, "m"));
    expect(a.out).toMatch(new RegExp(`^max_inotify_watches=${Math.floor(hostWatches / 2)}$`, "m"));
    expect(a.out).toMatch(/^max_user_namespaces=64$/m);
    expect(a.out).toMatch(/^max_net_namespaces=64$/m);
    expect(await hostUserLimit("max_inotify_instances")).toBe(hostInotify);
  });

  it("holds an owner lease exactly while the sandbox lives", async () => {
    // A range of one owner that nothing else uses: a second live sandbox finds no owner, one after the first died
    // (a zombie init included: tests do not reap) gets the same one again.
    const one = { usernsOwners: { base: 0x7ff0_0000, count: 1 }, uidRangesBase: undefined };
    const first = await fx.launch({ ...one, command: ["/bin/sh", "-c", "exec sleep infinity"] });
    expect(first.usernsOwner).toBe(0x7ff0_0000);
    await expect(fx.launch({ ...one, command: ["/bin/true"] })).rejects.toMatchObject({ code: "setup_failed", step: "owner" });
    await fx.kill(first);
    const again = await fx.launch({ ...one, command: ["/bin/sh", "-c", "exec sleep infinity"] });
    expect(again.usernsOwner).toBe(0x7ff0_0000);
    expect(namespaceOwner(again.pid)).toBe(0x7ff0_0000);
  });

  it("charges inotify instances to the sandbox's owner: filling them leaves host root and other sandboxes theirs", async () => {
    const host = await hostUserLimit("max_inotify_instances");
    const perUid = Math.floor(host / 2);
    const { out, sandbox } = await fx.run(`python3 - <<'EOF'\n${FILL_INOTIFY}\nEOF`);
    const filled = JSON.parse(out.trim().split("\n").pop() ?? "{}") as Record<string, [number, number]>;
    const EMFILE = 24;
    // Root and user each stop at the per-uid limit; together they hold the whole of what one host user may, so a
    // third uid gets only what is left of the sandbox's share.
    expect(filled).toEqual({ "0": [perUid, EMFILE], "1000": [perUid, EMFILE], "1001": [host - 2 * perUid, EMFILE] });
    expect(isSandboxInitAlive(sandbox.pid, sandbox.startTime)).toBe(true);
    expect(hostRootCanInotify()).toBe(true);
    const other = await fx.run(`python3 - <<'EOF'\n${FILL_INOTIFY}\nEOF`);
    expect(JSON.parse(other.out.trim().split("\n").pop() ?? "{}")).toEqual(filled);
  });

  it("without per-sandbox ranges, every sandbox runs as the canonical range itself", async () => {
    const { out, sandbox } = await fx.run("cat /proc/self/uid_map; echo root > /etc/by-root", { uidRangesBase: undefined });
    expect(out).toMatch(new RegExp(`^ *0 +${TEST_UID_BASE} +65536$`, "m"));
    expect(sandbox.hostUidBase).toBe(TEST_UID_BASE);
    const byRoot = await stat(join(sandbox.dirs.upper, "etc/by-root"));
    expect([byRoot.uid, byRoot.gid]).toEqual([TEST_UID_BASE, TEST_UID_BASE]);
  });

  it("fails with a typed error and leaves nothing behind", async () => {
    const badLower = fx.launch({ command: ["/bin/true"], lower: ["/nonexistent/layer"] });
    await expect(badLower).rejects.toBeInstanceOf(LaunchError);
    await expect(badLower).rejects.toMatchObject({ code: "setup_failed", step: "overlay" });

    const badCmd = fx.launch({ command: ["/no/such/binary"] });
    await expect(badCmd).rejects.toMatchObject({ code: "exec_failed", step: "exec" });

    const badArgs = fx.launch({ command: ["/bin/true"], hostname: "x".repeat(65) });
    await expect(badArgs).rejects.toMatchObject({ code: "invalid_argument", step: "args" });

    // An owner inside the mapped range would be a uid the sandbox's own files and processes carry on the host.
    const badOwners = fx.launch({ command: ["/bin/true"], usernsOwners: { base: TEST_UID_BASE + 10, count: 5 } });
    await expect(badOwners).rejects.toMatchObject({ code: "invalid_argument", step: "args" });
    // Ranges that would run into the canonical range.
    const badRanges = fx.launch({ command: ["/bin/true"], uidRangesBase: TEST_UID_BASE - 65536 });
    await expect(badRanges).rejects.toMatchObject({ code: "invalid_argument", step: "args" });

    const aborted = fx.launch({ command: ["/bin/true"] }, AbortSignal.abort());
    await expect(aborted).rejects.toMatchObject({ code: "aborted" });

    expect(await mountsUnder(await fx.dir())).toEqual([]);
  });
});
