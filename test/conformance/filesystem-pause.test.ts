// Filesystem-only pause and reboot on resume through the official SDK: `pause({ keepMemory: false })` ends the
// sandbox's processes and keeps its files, and `connect` cold-boots it (a new /proc/sys/kernel/random/boot_id, as
// E2B's own test checks); `connect(id, { onResume: 'reboot' })` cold-boots a memory-paused one too.
import { describe, expect } from "vitest";
import { Sandbox } from "e2b";
import { processExists, sandboxInternals } from "../helpers/sandbox-internals.js";
import { burrowEnv, sandboxTest, sdkOpts } from "./env.js";

const BOOT_ID = "/proc/sys/kernel/random/boot_id";

async function bootId(sbx: Sandbox): Promise<string> {
  return (await sbx.files.read(BOOT_ID)).trim();
}

describe("filesystem pause", () => {
  sandboxTest("pause({keepMemory: false}) ends processes and keeps files; connect reboots with a new boot id", async ({ sandbox }) => {
    const before = await bootId(sandbox);
    expect(before).toMatch(/^[0-9a-f-]{36}$/);
    await sandbox.files.write("/home/user/kept.txt", "kept over a reboot");
    // A process that only a memory pause would keep.
    await sandbox.commands.run("sleep 600", { background: true });
    const { pid } = sandboxInternals(burrowEnv().stateDir, sandbox.sandboxId);

    expect(await sandbox.pause({ keepMemory: false })).toBe(true);
    expect(processExists(pid)).toBe(false);
    const info = await Sandbox.getInfo(sandbox.sandboxId, sdkOpts());
    expect(info.state).toBe("paused");

    const resumed = await Sandbox.connect(sandbox.sandboxId, sdkOpts());
    const after = await bootId(resumed);
    expect(after).not.toBe(before);
    expect(await resumed.files.read("/home/user/kept.txt")).toBe("kept over a reboot");
    const sleeping = await resumed.commands.run("pgrep -x sleep || true");
    expect(sleeping.stdout.trim()).toBe("");
    // A second round keeps the files again (E2B's files-lost-after-a-second-resume bug).
    expect(await resumed.pause({ keepMemory: false })).toBe(true);
    const again = await Sandbox.connect(sandbox.sandboxId, sdkOpts());
    expect(await bootId(again)).not.toBe(after);
    expect(await again.files.read("/home/user/kept.txt")).toBe("kept over a reboot");
  });

  sandboxTest("connect with onResume 'reboot' cold-boots a memory-paused sandbox; a plain connect keeps the boot id", async ({ sandbox }) => {
    const before = await bootId(sandbox);
    await sandbox.files.write("/home/user/kept.txt", "kept");
    expect(await sandbox.pause()).toBe(true);
    const thawed = await Sandbox.connect(sandbox.sandboxId, sdkOpts());
    expect(await bootId(thawed)).toBe(before);

    expect(await thawed.pause()).toBe(true);
    const rebooted = await Sandbox.connect(sandbox.sandboxId, { ...sdkOpts(), onResume: "reboot" });
    expect(await bootId(rebooted)).not.toBe(before);
    expect(await rebooted.files.read("/home/user/kept.txt")).toBe("kept");
  });
});
