// Every sandbox has a hard disk limit (the test server uses the default, 4 GiB): writes past it fail inside the
// sandbox, and uploads through envd answer 507, which the SDK turns into NotEnoughSpaceError. A full disk also
// holds envd's own log (its stderr), which must not break the upload's connection.
import { describe, expect, inject, it } from "vitest";
import { NotEnoughSpaceError, Sandbox } from "e2b";

const env = inject("burrow");
const opts = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl };

describe("disk quota", () => {
  it("stops writes at the sandbox's disk size and answers uploads with 507", { timeout: 180_000 }, async () => {
    const sandbox = await Sandbox.create("base", opts);
    try {
      // Within the limit: fine.
      await sandbox.files.write("/home/user/small.bin", new ArrayBuffer(1024 * 1024));
      // no count: dd writes until the quota stops it, whatever the disk size
      const fill = await sandbox.commands.run("dd if=/dev/zero of=/home/user/fill bs=4M 2>&1; echo rc=$?", { timeoutMs: 120_000 });
      expect(fill.stdout).toMatch(/Disk quota exceeded/);
      expect(fill.stdout).toMatch(/rc=1/);
      const upload = await sandbox.files.write("/home/user/more.bin", new ArrayBuffer(8 * 1024 * 1024)).catch((e: unknown) => e);
      expect(upload).toBeInstanceOf(NotEnoughSpaceError);
      // Freeing space makes the sandbox writable again.
      await sandbox.commands.run("rm /home/user/fill && sync");
      await sandbox.files.write("/home/user/more.bin", new ArrayBuffer(8 * 1024 * 1024));
      expect((await sandbox.files.getInfo("/home/user/more.bin")).size).toBe(8 * 1024 * 1024);
    } finally {
      await sandbox.kill();
    }
  });
});
