// Directory watching (SDK tests sandbox/files/watch).
import { describe, expect } from "vitest";
import { FilesystemEventType, type FilesystemEvent } from "e2b";
import { sandboxTest } from "./env.js";

async function until(predicate: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error("timed out waiting for watch events");
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("watchDir", () => {
  sandboxTest("reports creates and writes", async ({ sandbox }) => {
    await sandbox.files.makeDir("w");
    const events: FilesystemEvent[] = [];
    const handle = await sandbox.files.watchDir("w", (e) => void events.push(e));
    await sandbox.files.write("w/f.txt", "1");
    await until(() => events.some((e) => e.name === "f.txt" && e.type === FilesystemEventType.CREATE));
    await sandbox.files.write("w/f.txt", "2");
    await until(() => events.some((e) => e.name === "f.txt" && e.type === FilesystemEventType.WRITE));
    await handle.stop();
  });

  sandboxTest("recursive with entries", async ({ sandbox }) => {
    await sandbox.files.makeDir("r/sub");
    const events: FilesystemEvent[] = [];
    const handle = await sandbox.files.watchDir("r", (e) => void events.push(e), { recursive: true, includeEntry: true });
    await sandbox.files.write("r/sub/deep.txt", "d");
    await until(() => events.some((e) => e.name === "sub/deep.txt"));
    const created = events.find((e) => e.name === "sub/deep.txt") as FilesystemEvent & { entry?: { path: string } };
    expect(created.entry?.path).toBe("/home/user/r/sub/deep.txt");
    await handle.stop();
  });

  sandboxTest("watching a missing directory fails", async ({ sandbox }) => {
    await expect(sandbox.files.watchDir("does-not-exist", () => undefined)).rejects.toThrow();
  });
});
