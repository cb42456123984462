// Volumes on a server of their own (the real CLI process): data written through one sandbox outlives it and a
// SIGKILLed server, and a third sandbox mounts the volume after the restart; a small volume size
// (BURROW_VOLUME_DEFAULT_MB) ends writes inside a sandbox with EDQUOT/ENOSPC and the content API's with a 507.
import { rmSync } from "node:fs";
import { Sandbox, Volume } from "e2b";
import { afterAll, describe, expect, it } from "vitest";
import { burrowDown, freePort, startServerProcess, stopServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { newTestInstance } from "../helpers/test-instance.js";

describe("volumes across a server restart, and their size limit", () => {
  const instance = newTestInstance("volrestart");
  let server: ServerProcess | undefined;
  const previousVolumeUrl = process.env["E2B_VOLUME_API_URL"];

  afterAll(async () => {
    if (server) await stopServerProcess(server, "SIGTERM");
    burrowDown(instance);
    rmSync(instance.stateDir, { recursive: true, force: true });
    if (previousVolumeUrl === undefined) delete process.env["E2B_VOLUME_API_URL"];
    else process.env["E2B_VOLUME_API_URL"] = previousVolumeUrl;
  });

  it("keeps a volume's files across sandboxes and a SIGKILLed server, and enforces its size", async () => {
    const port = await freePort();
    const env = { BURROW_VOLUME_DEFAULT_MB: "64" };
    server = await startServerProcess(instance, port, ["--pool-size", "0"], env);
    process.env["E2B_VOLUME_API_URL"] = server.url;
    let opts = { apiKey: server.apiKey, apiUrl: server.url, sandboxUrl: server.url, debug: false };
    const run = (sandbox: Sandbox, cmd: string) =>
      sandbox.commands.run(cmd, { timeoutMs: 120_000 }).catch((error: unknown) => error as { exitCode: number; stdout: string; stderr: string });

    const volume = await Volume.create("keeps", opts);
    const [a, b] = await Promise.all([
      Sandbox.create("base", { ...opts, timeoutMs: 300_000, volumeMounts: { "/data": volume } }),
      Sandbox.create("base", { ...opts, timeoutMs: 300_000, volumeMounts: { "/srv/data": volume } }),
    ]);
    expect((await run(a, "mkdir -p /data/notes && echo kept > /data/notes/a.txt")).exitCode).toBe(0);
    expect((await run(b, "cat /srv/data/notes/a.txt")).stdout).toBe("kept\n");
    expect(await a.kill()).toBe(true);
    expect(await b.kill()).toBe(true);

    await stopServerProcess(server, "SIGKILL");
    server = await startServerProcess(instance, port, ["--pool-size", "0"], env);
    opts = { ...opts, apiKey: server.apiKey };

    expect(await Volume.list(opts)).toContainEqual({ volumeId: volume.volumeId, name: "keeps" });
    const again = await Volume.connect(volume.volumeId, opts);
    expect(again.token).toBe(volume.token);
    expect(await again.readFile("/notes/a.txt")).toBe("kept\n");
    const c = await Sandbox.create("base", { ...opts, timeoutMs: 300_000, volumeMounts: { "/mnt/v": "keeps" } });
    expect((await run(c, "cat /mnt/v/notes/a.txt")).stdout).toBe("kept\n");

    // 64 MiB: a 100 MiB write inside the sandbox stops at the limit, for `user` and for root alike.
    const full = await run(c, "dd if=/dev/zero of=/mnt/v/big bs=1M count=100 conv=fsync 2>&1; echo exit=$?");
    expect(full.stdout).toMatch(/Disk quota exceeded|No space left on device/);
    expect(full.stdout).not.toContain("exit=0");
    // The sandbox's own writable layer is not charged for it, and freeing the volume makes room again.
    expect((await run(c, "rm /mnt/v/big && dd if=/dev/zero of=/mnt/v/small bs=1M count=8 conv=fsync 2>&1; echo exit=$?")).stdout).toContain("exit=0");
    // The content API gets a clear error (507) for a write past the limit.
    const tooBig = new Uint8Array(100 * 1024 * 1024);
    await expect(again.writeFile("/big-from-api.bin", tooBig.buffer)).rejects.toThrow(/volume is full/);
    await again.remove("/big-from-api.bin").catch(() => undefined);

    // Mounted: not deletable; killed: deleted, files and all.
    await expect(Volume.destroy(volume.volumeId, opts)).rejects.toThrow(/mounted by sandbox/);
    expect(await c.kill()).toBe(true);
    expect(await Volume.destroy(volume.volumeId, opts)).toBe(true);
    expect(await Volume.list(opts)).toEqual([]);
  }, 900_000);
});
