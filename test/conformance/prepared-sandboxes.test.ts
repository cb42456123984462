// Prepared sandboxes ("shells"): the server keeps a few sandboxes running on the pool's template with a writable
// layer of their own; a create of a template that has no ready sandbox of its own takes one and gives it the
// template's root (launcher --swap-root), so init, envd and the network are already up. Through the official SDK,
// such a sandbox must be indistinguishable from a launched one: the template's files, env, workdir, user and start
// command; commands, background processes, PTYs, files and watches; a memory pause and a filesystem pause (cold
// boot on the template's layers, files kept); and nothing left of its first root, inside or on the host.
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { Sandbox, Template, waitForFile } from "e2b";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { deleteTemplate } from "../templates/delete-template.js";

const env = inject("burrow");
const opts = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl };
const name = `prepared-${Math.random().toString(36).slice(2, 8)}`;
const started: string[] = [];

async function metrics(): Promise<string> {
  return (await fetch(`${env.apiUrl}/metrics`)).text();
}

/** Creates served by a prepared sandbox so far. */
async function shellClaims(): Promise<number> {
  return Number(/^burrow_sandbox_claim_duration_seconds_count\{source="shell"\} (\d+)/m.exec(await metrics())?.[1] ?? 0);
}

/** The prepared sandboxes waiting now (records with template "*"), once as many as the pool's target are ready. */
async function readyShells(): Promise<string[]> {
  const dir = join(env.stateDir, "sandboxes");
  for (let i = 0; i < 600; i++) {
    const text = await metrics();
    const value = (state: string) => Number(new RegExp(`^burrow_pool_sandboxes\\{[^}]*kind="shells"[^}]*state="${state}"[^}]*\\} (\\d+)`, "m").exec(text)?.[1] ?? -1);
    const ids = readdirSync(dir).filter((id) => {
      try {
        const record = JSON.parse(readFileSync(join(dir, id, "sandbox.json"), "utf8")) as { pooled: boolean; templateId: string };
        return record.pooled && record.templateId === "*";
      } catch {
        return false;
      }
    });
    if (value("target") > 0 && value("ready") === value("target") && ids.length === value("target")) return ids;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error("the prepared sandboxes did not become ready");
}

async function sh(sandbox: Sandbox, cmd: string, user: "root" | "user" = "user") {
  return sandbox.commands.run(cmd, { user, timeoutMs: 60_000 });
}

beforeAll(async () => {
  const template = Template()
    .fromTemplate("base")
    .runCmd("mkdir -p /opt/app && echo from-the-template > /opt/app/marker", { user: "root" })
    .setEnvs({ PREPARED: "yes" })
    .setWorkdir("/opt/app")
    .setStartCmd("touch /tmp/started && sleep infinity", waitForFile("/tmp/started"));
  await Template.build(template, name, opts);
}, 600_000);

afterAll(async () => {
  await Promise.allSettled(started.map((id) => Sandbox.kill(id, opts)));
  await deleteTemplate(env, name);
});

describe("prepared sandboxes", () => {
  it("serve a create of a template without a pool: its files, env, workdir and start command, nothing of the first root", { timeout: 300_000 }, async () => {
    const shells = await readyShells();
    const before = await shellClaims();
    const sandbox = await Sandbox.create(name, { ...opts, timeoutMs: 120_000 });
    started.push(sandbox.sandboxId);
    expect(shells).toContain(sandbox.sandboxId);
    expect(await shellClaims()).toBe(before + 1);

    expect((await sh(sandbox, "cat /opt/app/marker; echo $PREPARED; pwd; whoami; cat /etc/hostname")).stdout).toBe(
      "from-the-template\nyes\n/opt/app\nuser\nsandbox\n",
    );
    expect((await sh(sandbox, "test -f /tmp/started && echo started")).stdout).toBe("started\n");
    // One root: the template's overlay; the swap point and the first root's writable layer are nowhere.
    expect((await sh(sandbox, "grep -c ' - overlay ' /proc/self/mountinfo; ls -a / | grep -c burrow-swap || true", "root")).stdout).toBe("1\n0\n");
    expect((await sh(sandbox, "tr -d '\\0' < /proc/1/cmdline; echo; cat /.burrow/envd/envd.cjs >/dev/null && echo runtime")).stdout).toMatch(
      /^burrow-init\nruntime\n$/,
    );
    const dir = join(env.stateDir, "sandboxes", sandbox.sandboxId);
    for (let i = 0; i < 50 && existsSync(join(dir, "shell")); i++) await new Promise((r) => setTimeout(r, 100));
    expect(existsSync(join(dir, "shell"))).toBe(false);
    expect(readFileSync(join(dir, "upper", "tmp", "started"), "utf8")).toBe("");

    // envd works in the new root: background processes, PTYs, files and watches.
    const bg = await sandbox.commands.run("sleep 0.3; echo bg-done > /tmp/bg", { background: true });
    await bg.wait();
    expect(await sandbox.files.read("/tmp/bg")).toBe("bg-done\n");
    const seen: string[] = [];
    const watcher = await sandbox.files.watchDir("/opt/app", (e) => void seen.push(e.name), { user: "root" });
    await sandbox.files.write("/opt/app/new.txt", "written\n", { user: "root" });
    for (let i = 0; i < 50 && !seen.includes("new.txt"); i++) await new Promise((r) => setTimeout(r, 100));
    await watcher.stop();
    expect(seen).toContain("new.txt");
    let ptyOut = "";
    const pty = await sandbox.pty.create({ cols: 80, rows: 24, onData: (d) => void (ptyOut += new TextDecoder().decode(d)) });
    await sandbox.pty.sendInput(pty.pid, new TextEncoder().encode("cat /opt/app/marker; exit\n"));
    await pty.wait().catch(() => undefined);
    expect(ptyOut).toContain("from-the-template");
  });

  it("pause to memory and to the filesystem and come back on the template's layers, files kept", { timeout: 300_000 }, async () => {
    await readyShells();
    const sandbox = await Sandbox.create(name, { ...opts, timeoutMs: 120_000 });
    started.push(sandbox.sandboxId);
    await sandbox.files.write("/home/user/kept.txt", "kept\n");

    expect(await sandbox.pause()).toBe(true);
    const resumed = await Sandbox.connect(sandbox.sandboxId, opts);
    expect((await sh(resumed, "cat /home/user/kept.txt /opt/app/marker")).stdout).toBe("kept\nfrom-the-template\n");

    expect(await Sandbox.pause(sandbox.sandboxId, { ...opts, keepMemory: false })).toBe(true);
    const booted = await Sandbox.connect(sandbox.sandboxId, opts);
    expect((await sh(booted, "cat /home/user/kept.txt /opt/app/marker; echo $PREPARED; test -f /tmp/started && echo started")).stdout).toBe(
      "kept\nfrom-the-template\nyes\nstarted\n",
    );
  });
});
