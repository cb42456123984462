// The launcher's --swap-root on real sandboxes: a running sandbox (a prepared one, launched before its template was
// known) gets a new root filesystem — another stack of layers over a writable layer of its own — and what already
// runs in it continues there: its root and working directory follow the pivot, /proc, /sys, /dev and /.burrow come
// along, and nothing of the old root stays visible or mounted.
import { chown, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { swapRoot } from "../src/launcher/index.js";
import { ensureTestRootfs, TEST_UID_BASE, TEST_UID_COUNT } from "./helpers/base-rootfs.js";
import { POLL } from "./helpers/poll.js";
import { makeMiniRuntime, SandboxFixture, type LaunchedTestSandbox } from "./helpers/sandbox-fixture.js";

// Runs from the shell's root: marks that root, then waits for the template's marker to appear and reports what it
// sees from the new root (files land in the writable layer of whichever root is "/" at the time).
const WATCHER = String.raw`
echo shell > /shell-only
while [ ! -f /template-marker ]; do sleep 0.02; done
{
  cat /template-marker
  cat /.burrow/hello.txt
  [ -e /shell-only ] && echo "shell file visible" || echo "no shell file"
  cat /proc/sys/kernel/random/boot_id
  hostname
  ls /dev/null /dev/pts >/dev/null && echo "dev ok"
  grep -c ' - overlay ' /proc/self/mountinfo
  pwd
} > /tmp/.seen 2>&1
mv /tmp/.seen /tmp/seen
exec sleep infinity
`;

describe("--swap-root", () => {
  let fx: SandboxFixture;
  let lower: string;
  let templateLayer: string;

  beforeAll(async () => {
    lower = await ensureTestRootfs();
    fx = new SandboxFixture(lower);
    const dir = await fx.dir();
    fx.runtime = await makeMiniRuntime(dir);
    // A template layer: one file on top of the base rootfs, owned as layers hold files (canonical ids).
    templateLayer = join(dir, "template-layer");
    await mkdir(templateLayer);
    await writeFile(join(templateLayer, "template-marker"), "from the template\n");
    await chown(join(templateLayer, "template-marker"), TEST_UID_BASE, TEST_UID_BASE);
  });
  afterAll(async () => {
    await fx.cleanup();
  });

  async function swapInto(sandbox: LaunchedTestSandbox, layers: string[]) {
    const target = await fx.newDirs();
    await swapRoot({
      reaper: await fx.reaperPaths(),
      pid: sandbox.pid,
      pidStartTime: sandbox.startTime,
      uidBase: TEST_UID_BASE,
      uidCount: TEST_UID_COUNT,
      hostUidBase: sandbox.hostUidBase,
      lower: layers,
      upper: target.upper,
      work: target.work,
      merged: target.merged,
    });
    return target;
  }

  it("moves a running sandbox into a new root, with its processes, /proc, /dev and /.burrow, and drops the old one", async () => {
    const bootId = "0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0";
    const shell = await fx.launch({ command: ["/bin/sh", "-c", WATCHER], bootId });
    await vi.waitFor(() => readFile(join(shell.dirs.upper, "shell-only"), "utf8"), POLL);

    const target = await swapInto(shell, [templateLayer, lower]);

    const seen = await vi.waitFor(() => readFile(join(target.upper, "tmp/seen"), "utf8"), POLL);
    expect(seen.split("\n")).toEqual([
      "from the template",
      "hello from the runtime",
      "no shell file",
      bootId,
      "sbx-test",
      "dev ok",
      "1", // one overlay mounted in the sandbox: the new root; the old one is gone
      "/",
      "",
    ]);
    // The writable layer of the new root got the writes; the shell's got nothing after the swap.
    await expect(readFile(join(shell.dirs.upper, "tmp/seen"), "utf8")).rejects.toThrow();
    // The sandbox's own mount table from the host: its "/" is the new overlay, nothing of the shell's root is left.
    const mountinfo = await readFile(`/proc/${shell.pid}/mountinfo`, "utf8");
    expect(mountinfo.split("\n").filter((l) => l.includes(" - overlay "))).toHaveLength(1);
    expect(mountinfo).not.toContain("burrow-swap");
  });

  it("refuses a pid that is not the recorded init, and the sandbox keeps its root", async () => {
    const shell = await fx.launch({ command: ["/bin/sh", "-c", WATCHER] });
    await vi.waitFor(() => readFile(join(shell.dirs.upper, "shell-only"), "utf8"), POLL);
    await expect(swapInto({ ...shell, startTime: "1" }, [templateLayer, lower])).rejects.toMatchObject({ reason: "root_swap_failed" });
    await new Promise((r) => setTimeout(r, 200));
    await expect(readFile(join(shell.dirs.upper, "tmp/seen"), "utf8")).rejects.toThrow();
  });
});
