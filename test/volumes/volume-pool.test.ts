// A create with volumeMounts takes a sandbox from the warm pool (the global server keeps 2 of base) and has the
// volumes bound into it by the launcher's --attach-volumes mode before the create returns: the claim is counted
// with source "pool" and the sandbox is one the pool held; the mount is read-write, nosuid, nodev, idmapped (a file
// `user` writes is uid 1000 on the volume), shared with a second pooled sandbox, and kept through a memory pause
// and a cold boot. When the attach fails in the pooled sandbox (a file where the mount point goes, planted in its
// writable layer from the host), that sandbox is killed and the create is served by a launch instead.
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Sandbox, Volume } from "e2b";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";

const env = inject("burrow");
const opts = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl, debug: false };
const started: string[] = [];
const volumes: string[] = [];

async function create(mounts: Record<string, Volume | string>): Promise<Sandbox> {
  const sandbox = await Sandbox.create("base", { ...opts, timeoutMs: 300_000, volumeMounts: mounts });
  started.push(sandbox.sandboxId);
  return sandbox;
}

async function newVolume(label: string): Promise<Volume> {
  const volume = await Volume.create(`${label}-${Date.now().toString(36)}`, opts);
  volumes.push(volume.volumeId);
  return volume;
}

async function sh(sandbox: Sandbox, cmd: string, user: "root" | "user" = "user") {
  return sandbox.commands.run(cmd, { user, timeoutMs: 60_000 }).catch((error: unknown) => error as { exitCode: number; stdout: string; stderr: string });
}

async function metrics(): Promise<string> {
  return (await fetch(`${env.apiUrl}/metrics`)).text();
}

/** Creates counted by the orchestrator, by where their sandbox came from. */
async function claims(): Promise<{ pool: number; launch: number }> {
  const counts = { pool: 0, launch: 0 };
  // A prepared sandbox given the template's root ("shell") is not a pooled sandbox of the template: a launch here.
  for (const m of (await metrics()).matchAll(/^burrow_sandbox_claim_duration_seconds_count\{source="(pool|shell|launch)"\} (\d+)/gm)) {
    counts[m[1] === "pool" ? "pool" : "launch"] += Number(m[2]);
  }
  return counts;
}

const sandboxesDir = () => join(env.stateDir, "sandboxes");

/** The id `base` names now (the warm pool's template). */
async function baseTemplateId(): Promise<string> {
  const res = await fetch(`${env.apiUrl}/templates/aliases/base`, { headers: { "X-API-Key": env.apiKey } });
  return ((await res.json()) as { templateID: string }).templateID;
}

/** The warm pool's sandboxes: pooled records of base (the prestarted pools of other templates hold pooled ones too). */
function pooledIds(templateId: string): string[] {
  return readdirSync(sandboxesDir()).filter((id) => {
    try {
      const record = JSON.parse(readFileSync(join(sandboxesDir(), id, "sandbox.json"), "utf8")) as { pooled?: boolean; templateId?: string };
      return record.pooled === true && record.templateId === templateId;
    } catch {
      return false;
    }
  });
}

/** Waits until the warm pool is full and every pooled sandbox is ready; returns their ids. */
async function fullPool(): Promise<string[]> {
  const deadline = Date.now() + 120_000;
  const base = await baseTemplateId();
  for (;;) {
    const text = await metrics();
    const value = (state: string) => Number(new RegExp(`^burrow_pool_sandboxes\\{[^}]*kind="warm"[^}]*state="${state}"[^}]*\\} (\\d+)`, "m").exec(text)?.[1] ?? -1);
    const ids = pooledIds(base);
    if (value("target") > 0 && value("ready") === value("target") && value("starting") === 0 && ids.length === value("target")) return ids;
    if (Date.now() > deadline) throw new Error(`the pool did not fill: ${text.split("\n").filter((l) => l.startsWith("burrow_pool")).join("; ")}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

beforeAll(() => {
  process.env["E2B_VOLUME_API_URL"] = env.apiUrl;
});

afterAll(async () => {
  await Promise.allSettled(started.map((id) => Sandbox.kill(id, opts)));
  await Promise.allSettled(volumes.map((id) => Volume.destroy(id, opts)));
});

describe("volumes on pooled sandboxes", () => {
  it("serves a create with a volume from the pool; the mount is the launcher's and survives pause and a cold boot", { timeout: 240_000 }, async () => {
    const volume = await newVolume("pooled");
    const pooled = await fullPool();
    const before = await claims();
    const a = await create({ "/mnt/pooled": volume });
    expect(pooled).toContain(a.sandboxId);
    expect(await claims()).toEqual({ pool: before.pool + 1, launch: before.launch });

    expect((await sh(a, "echo from-a > /mnt/pooled/a.txt && stat -c '%U %u' /mnt/pooled/a.txt")).stdout.trim()).toBe("user 1000");
    expect((await sh(a, "grep ' /mnt/pooled ' /proc/self/mountinfo")).stdout).toMatch(/ rw,nosuid,nodev/);
    expect((await sh(a, "stat -c '%U %a' /mnt")).stdout.trim()).toBe("root 755");
    // On disk the file holds the canonical ids, as a launch's mount writes them.
    expect(await volume.getInfo("/a.txt")).toMatchObject({ uid: 1000, gid: 1000 });

    const pooledAgain = await fullPool();
    const b = await create({ "/home/user/data": volume.name });
    expect(pooledAgain).toContain(b.sandboxId);
    expect((await sh(b, "cat /home/user/data/a.txt && echo from-b > /home/user/data/b.txt", "root")).stdout).toBe("from-a\n");
    expect((await sh(a, "cat /mnt/pooled/b.txt")).stdout).toBe("from-b\n");

    expect(await a.pause()).toBe(true);
    await volume.writeFile("/while-paused.txt", "paused\n");
    const resumed = await Sandbox.connect(a.sandboxId, opts);
    expect((await sh(resumed, "cat /mnt/pooled/while-paused.txt")).stdout).toBe("paused\n");
    // A filesystem pause ends every process; the cold boot binds the volume from the record.
    expect(await Sandbox.pause(a.sandboxId, { ...opts, keepMemory: false })).toBe(true);
    const booted = await Sandbox.connect(a.sandboxId, opts);
    expect((await sh(booted, "cat /mnt/pooled/a.txt /mnt/pooled/b.txt")).stdout).toBe("from-a\nfrom-b\n");
    expect((await booted.getInfo()).volumeMounts).toEqual([{ name: volume.name, path: "/mnt/pooled" }]);
  });

  it("kills a pooled sandbox whose attach fails and serves the create by a launch", { timeout: 240_000 }, async () => {
    const volume = await newVolume("fallback");
    const pooled = await fullPool();
    // Every pooled sandbox gets a file where the mount point goes (a fresh launch does not).
    const clash = `clash-${Date.now().toString(36)}`;
    for (const id of pooled) writeFileSync(join(sandboxesDir(), id, "upper", clash), "not a directory\n");
    const before = await claims();
    const sandbox = await create({ [`/${clash}`]: volume });
    expect(pooled).not.toContain(sandbox.sandboxId);
    expect(await claims()).toEqual({ pool: before.pool, launch: before.launch + 1 });
    // The pooled sandbox the create took is gone (its directory removed), the other still waits.
    expect(pooled.filter((id) => existsSync(join(sandboxesDir(), id))).length).toBe(pooled.length - 1);
    expect((await sh(sandbox, `echo ok > /${clash}/f && cat /${clash}/f`)).stdout).toBe("ok\n");
    expect(await volume.readFile("/f")).toBe("ok\n");
  });
});
