// Nothing a sandbox writes can stop a start or garbage collection: sandboxes holding trees deeper than PATH_MAX,
// left behind by a killed server (one whose init died, one whose record is gone, as after a half-done removal),
// are reaped by the next start, which comes up and serves. With plain-directory storage a RUN step's deep tree
// becomes a layer, and deleting its template collects it. Each storage layout gets its own server process.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { Sandbox, Template } from "e2b";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEEP_LEVELS, deepTreeDepthOnHost, deepTreeScript } from "../helpers/deep-tree.js";
import { dirExists, leftoverCgroups, processExists, sandboxInternals } from "../helpers/sandbox-internals.js";
import { burrowDown, freePort, startServerProcess, stopServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { newTestInstance } from "../helpers/test-instance.js";
import { deleteTemplate } from "../templates/delete-template.js";

describe.each(["btrfs", "directory"] as const)("deep trees with %s storage", (storage) => {
  const instance = newTestInstance(`deep${storage === "btrfs" ? "b" : "d"}`);
  let server: ServerProcess | undefined;
  let port = 0;
  const conn = () => ({ apiKey: server?.apiKey ?? "", apiUrl: server?.url ?? "", sandboxUrl: server?.url ?? "" });

  beforeAll(async () => {
    // A state directory that already holds layers as plain directories keeps that layout (no disk image).
    if (storage === "directory") mkdirSync(join(instance.stateDir, "layers", "plain-layout"), { recursive: true });
    port = await freePort();
    server = await startServerProcess(instance, port, ["--pool-size", "0"]);
    expect(existsSync(join(instance.stateDir, "disk.img"))).toBe(storage === "btrfs");
  });

  afterAll(async () => {
    try {
      if (server) await stopServerProcess(server, "SIGTERM");
      unmountTestMounts(instance.stateDir);
      burrowDown(instance);
    } finally {
      // Not fs.rm: should a test have failed, a deep tree may still be in the state directory.
      execFileSync("rm", ["-rf", "--one-file-system", "--", instance.stateDir]);
    }
    expect(existsSync(instance.stateDir)).toBe(false);
  });

  async function sandboxWithDeepTree(): Promise<{ sandbox: Sandbox; inside: ReturnType<typeof sandboxInternals> }> {
    const sandbox = await Sandbox.create("base", conn());
    await sandbox.files.write("/tmp/deep.py", deepTreeScript("/home/user/deep"));
    await sandbox.commands.run("python3 /tmp/deep.py", { user: "user" });
    const inside = sandboxInternals(instance.stateDir, sandbox.sandboxId);
    expect(deepTreeDepthOnHost(join(inside.dir, "upper/home/user/deep"))).toBe(DEEP_LEVELS);
    return { sandbox, inside };
  }

  it("kill removes the tree and answers as E2B does", async () => {
    const { sandbox, inside } = await sandboxWithDeepTree();
    expect(await sandbox.kill()).toBe(true);
    expect(processExists(inside.pid)).toBe(false);
    expect(dirExists(inside.dir)).toBe(false);
    expect(await Sandbox.kill(sandbox.sandboxId, conn())).toBe(false);
  });

  it("the next start reaps deep trees a killed server left behind, then comes up and serves", { timeout: 600_000 }, async () => {
    // A kill whose directory cannot be removed (here a mount the removal will not cross) still succeeds: the
    // sandbox has ended; its directory is retried later, at the latest by the next start.
    const held = await sandboxWithDeepTree();
    const mountPoint = join(held.inside.dir, "held");
    mkdirSync(mountPoint);
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", TEST_MOUNT_SOURCE, mountPoint]);
    expect(await held.sandbox.kill()).toBe(true);
    expect(processExists(held.inside.pid)).toBe(false);
    expect(dirExists(held.inside.dir)).toBe(true);
    execFileSync("umount", [mountPoint]);

    const deadInit = await sandboxWithDeepTree();
    const noRecord = await sandboxWithDeepTree();
    if (!server) throw new Error("no server");
    await stopServerProcess(server, "SIGKILL");
    server = undefined;
    // One sandbox dies while no server runs; the other loses its record, as a directory half removed would.
    process.kill(deadInit.inside.pid, "SIGKILL");
    await waitFor(() => !processExists(deadInit.inside.pid), "the killed sandbox init to be gone");
    rmSync(join(noRecord.inside.dir, "sandbox.json"));
    expect(processExists(noRecord.inside.pid)).toBe(true);

    server = await startServerProcess(instance, port, ["--pool-size", "0"]);

    for (const { sandbox, inside } of [held, deadInit, noRecord]) {
      expect(dirExists(inside.dir)).toBe(false);
      expect(processExists(inside.pid)).toBe(false);
      expect(leftoverCgroups(instance.instance, sandbox.sandboxId)).toEqual([]);
      expect(await Sandbox.kill(sandbox.sandboxId, conn())).toBe(false);
    }
    expect(readdirSync(join(instance.stateDir, "sandboxes"))).toEqual([]);
    const fresh = await Sandbox.create("base", conn());
    expect((await fresh.commands.run("echo up")).stdout.trim()).toBe("up");
    expect(await fresh.kill()).toBe(true);
  });

  it.runIf(storage === "directory")(
    "a RUN step's deep tree becomes a layer, which is collected once its template is deleted",
    { timeout: 600_000 },
    async () => {
      const name = `deep-layer-${Math.random().toString(36).slice(2, 8)}`;
      const template = Template()
        .fromTemplate("base")
        .runCmd(`cat > /tmp/deep.py <<'EOF'\n${deepTreeScript("/home/user/deep")}EOF`, { user: "user" })
        .runCmd("python3 /tmp/deep.py", { user: "user" });
      const { templateId } = await Template.build(template, name, { ...conn(), onBuildLogs: () => undefined });
      const manifest = JSON.parse(readFileSync(join(instance.stateDir, "templates", `${templateId}.json`), "utf8")) as { layers: string[] };
      const top = manifest.layers[0] ?? "";
      const layersDir = join(instance.stateDir, "layers");
      expect(deepTreeDepthOnHost(join(layersDir, top, "home/user/deep"))).toBe(DEEP_LEVELS);
      const sandbox = await Sandbox.create(name, conn());
      expect((await sandbox.commands.run("find /home/user/deep -name bottom.txt | wc -l")).stdout.trim()).toBe("1");
      expect(await sandbox.kill()).toBe(true);

      await deleteTemplate({ apiUrl: server?.url ?? "", apiKey: server?.apiKey ?? "" }, name);

      const left = () => readdirSync(layersDir).filter((entry) => entry === top || entry.startsWith(".tmp-"));
      await waitFor(() => left().length === 0, `the deleted template's layer to be collected (left: ${left().join(", ")})`);
    },
  );
});

/** Source name of the tmpfs mounts tests make, so that clean-up finds exactly those. */
const TEST_MOUNT_SOURCE = "burrow-test-held";

function unmountTestMounts(stateDir: string): void {
  const mountPoints = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .filter((line) => line.split(" - ")[1]?.split(" ")[1] === TEST_MOUNT_SOURCE)
    .map((line) => line.split(" ")[4] ?? "")
    .filter((mountPoint) => mountPoint.startsWith(`${stateDir}/`));
  for (const mountPoint of mountPoints) execFileSync("umount", [mountPoint]);
}

async function waitFor(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 600 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 100));
  if (!condition()) throw new Error(`gave up waiting for ${what}`);
}
