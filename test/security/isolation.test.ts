// Isolation as seen from inside a sandbox: every escape route a model-written program might try must fail,
// while the same probe aimed at something allowed succeeds (so a failing probe proves the wall, not a typo).
import { createServer, type Server } from "node:net";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { Sandbox } from "e2b";
import { sandboxInternals } from "../helpers/sandbox-internals.js";

const env = inject("burrow");
const opts = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl };

/** A python one-liner that tries a TCP connect and prints "open" or the error name. */
function connectProbe(host: string, port: number): string {
  return `python3 -c "
import socket,sys
s=socket.socket(); s.settimeout(2)
try:
    s.connect(('${host}', ${port})); print('open')
except Exception as e:
    print(type(e).__name__)
"`;
}

describe("sandbox isolation", () => {
  let sandbox: Sandbox;
  let neighbour: Sandbox;
  let hostServer: Server;
  let hostPort = 0;
  let secretDir = "";

  beforeAll(async () => {
    sandbox = await Sandbox.create("base", { ...opts, metadata: { suite: "isolation" } });
    neighbour = await Sandbox.create("base", { ...opts, metadata: { suite: "isolation" } });
    // A host service bound to every address, the way many real services listen.
    hostServer = createServer((socket) => socket.end("host-secret\n"));
    await new Promise<void>((resolve) => hostServer.listen(0, "0.0.0.0", resolve));
    hostPort = (hostServer.address() as { port: number }).port;
    secretDir = mkdtempSync("/var/tmp/burrow-secret-");
    writeFileSync(join(secretDir, "secret.txt"), "host secret");
  });

  afterAll(async () => {
    await sandbox?.kill();
    await neighbour?.kill();
    hostServer?.close();
    rmSync(secretDir, { recursive: true, force: true });
  });

  it("runs as root mapped to an unprivileged host uid", async () => {
    const { stdout } = await sandbox.commands.run("cat /proc/self/uid_map", { user: "root" });
    const [inside, outside] = stdout.trim().split(/\s+/).map(Number);
    expect(inside).toBe(0);
    expect(outside).toBeGreaterThanOrEqual(100_000);
    const { pid } = sandboxInternals(env.stateDir, sandbox.sandboxId);
    const status = (await import("node:fs")).readFileSync(`/proc/${pid}/status`, "utf8");
    const hostUid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]);
    expect(hostUid).toBeGreaterThanOrEqual(100_000);
  });

  it("cannot read host files", async () => {
    const res = await sandbox.commands.run(`cat ${join(secretDir, "secret.txt")} 2>&1 || echo denied`, { user: "root" });
    expect(res.stdout).not.toContain("host secret");
    expect(res.stdout).toContain("denied");
    // The host's own file system is not mounted anywhere inside.
    const mounts = await sandbox.commands.run("cat /proc/self/mountinfo", { user: "root" });
    expect(mounts.stdout).not.toContain(secretDir);
  });

  it("cannot see host processes", async () => {
    const res = await sandbox.commands.run("ls /proc | grep -E '^[0-9]+$' | sort -n", { user: "root" });
    const pids = res.stdout.trim().split("\n").map(Number);
    expect(pids[0]).toBe(1);
    expect(pids).not.toContain(process.pid);
    // A sandbox runs a handful of processes, not the host's hundreds.
    expect(pids.length).toBeLessThan(30);
    const kill = await sandbox.commands.run(`kill -0 ${process.pid} 2>&1 || echo no-such-process`, { user: "root" });
    if (pids.includes(process.pid)) throw new Error("host pid visible");
    expect(kill.stdout).toContain("no-such-process");
  });

  it("cannot mount, unshare or use keyrings, even as root", async () => {
    const mount = await sandbox.commands.run("mkdir -p /mnt/x && mount -t tmpfs none /mnt/x 2>&1; echo rc=$?", { user: "root" });
    expect(mount.stdout).toMatch(/rc=(?!0)\d+/);
    const unshare = await sandbox.commands.run("unshare -U -r true 2>&1; echo rc=$?", { user: "root" });
    expect(unshare.stdout).toMatch(/rc=(?!0)\d+/);
    const keyctl = await sandbox.commands.run(
      `python3 -c "
import ctypes,ctypes.util
libc=ctypes.CDLL(None,use_errno=True)
r=libc.syscall(248,b'user',b'k',b'v',1,-4)  # add_key into the session keyring
print('errno',ctypes.get_errno() if r<0 else 0)"`,
      { user: "root" },
    );
    expect(keyctl.stdout.trim()).toBe("errno 1");
  });

  it("cannot ptrace processes outside the sandbox", async () => {
    const res = await sandbox.commands.run(
      `python3 -c "
import ctypes
libc=ctypes.CDLL(None,use_errno=True)
r=libc.ptrace(16, ${process.pid}, 0, 0)  # PTRACE_ATTACH to the host test runner
print('ok' if r==0 else 'errno %d' % ctypes.get_errno())"`,
      { user: "root" },
    );
    expect(res.stdout.trim()).toMatch(/^errno (1|3)$/); // EPERM or ESRCH
  });

  it("cannot reach host services, on the bridge or on the sandbox's own loopback", async () => {
    const gateway = (await sandbox.commands.run("ip route show default | awk '{print $3}'")).stdout.trim();
    expect(gateway).toMatch(/^10\.\d+\.\d+\.\d+$/);
    expect((await sandbox.commands.run(connectProbe(gateway, hostPort))).stdout.trim()).not.toBe("open");
    expect((await sandbox.commands.run(connectProbe("127.0.0.1", hostPort))).stdout.trim()).not.toBe("open");
  });

  it("cannot reach another sandbox, which the host can reach", async () => {
    await neighbour.commands.run("python3 -m http.server 8080 --bind 0.0.0.0", { background: true });
    const host = neighbour.getHost(8080);
    // Positive control through the gateway: the neighbour's server is up.
    let reachable = false;
    for (let i = 0; i < 50 && !reachable; i++) {
      const res = await fetch(`${env.apiUrl}/`, {
        headers: { "E2b-Sandbox-Id": neighbour.sandboxId, "E2b-Sandbox-Port": "8080" },
      }).catch(() => undefined);
      reachable = res?.status === 200;
      if (!reachable) await new Promise((r) => setTimeout(r, 100));
    }
    expect(reachable, `gateway could not reach ${host}`).toBe(true);
    const { ip } = sandboxInternals(env.stateDir, neighbour.sandboxId);
    expect((await sandbox.commands.run(connectProbe(ip, 8080))).stdout.trim()).not.toBe("open");
  });

  it("is killed inside when it exceeds its memory limit, and the sandbox lives on", async () => {
    const res = await sandbox.commands
      .run(`python3 -c "
chunks=[]
for i in range(4096):
    chunks.append(bytearray(1024*1024))
print('allocated 4 GiB')"`)
      .catch((error: { exitCode?: number; stdout?: string }) => error);
    expect((res as { stdout?: string }).stdout ?? "").not.toContain("allocated");
    expect((res as { exitCode?: number }).exitCode).not.toBe(0);
    expect((await sandbox.commands.run("echo alive")).stdout.trim()).toBe("alive");
  });

  it("cannot exceed its pids limit", async () => {
    const res = await sandbox.commands.run(
      `python3 -c "
import os,time,signal
kids=[]
try:
    for i in range(5000):
        p=os.fork()
        if p==0:
            time.sleep(30); os._exit(0)
        kids.append(p)
except OSError as e:
    print('stopped at', len(kids), type(e).__name__)
else:
    print('forked', len(kids))
for p in kids: os.kill(p, signal.SIGKILL)
for p in kids: os.waitpid(p, 0)
"`,
      { timeoutMs: 60_000 },
    );
    expect(res.stdout).toMatch(/stopped at \d+/);
    const forked = Number(/stopped at (\d+)/.exec(res.stdout)?.[1]);
    expect(forked).toBeLessThan(5000);
  });
});
