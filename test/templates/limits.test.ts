// A template's CPU and memory settings (Template.build's cpuCount/memoryMB) become the limits of every sandbox
// created from it: reported by getInfo, written to the sandbox's cgroups, and enforced inside.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Sandbox, Template } from "e2b";
import { afterAll, describe, expect, inject, it } from "vitest";
import { deleteTemplate } from "./delete-template.js";

const env = inject("burrow");
const conn = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl };
const name = `limits-${Math.random().toString(36).slice(2, 8)}`;

afterAll(async () => {
  await deleteTemplate(env, name);
});

/** The sandbox's directory in one cgroup hierarchy (found by name under this instance's parent). */
function cgroupFile(hierarchy: string, sandboxId: string, file: string): string {
  const dirs = execFileSync("find", [`/sys/fs/cgroup/${hierarchy}`, "-maxdepth", "5", "-type", "d", "-name", sandboxId], {
    encoding: "utf8",
  })
    .split("\n")
    .filter((d) => d.includes(`burrow-${env.instance}`));
  if (!dirs[0]) throw new Error(`no ${hierarchy} cgroup for ${sandboxId}`);
  return readFileSync(join(dirs[0], file), "utf8").trim();
}

describe("template limits", () => {
  it("applies the template's cpuCount and memoryMB to its sandboxes", async () => {
    await Template.build(Template().fromTemplate("base").runCmd("echo built > /tmp/built"), name, {
      ...conn,
      cpuCount: 1,
      memoryMB: 256,
    });
    const sandbox = await Sandbox.create(name, conn);
    try {
      const info = await sandbox.getInfo();
      expect(info.cpuCount).toBe(1);
      expect(info.memoryMB).toBe(256);
      // On this host's hybrid layout the limits live in the v1 memory and cpu hierarchies.
      expect(Number(cgroupFile("memory", sandbox.sandboxId, "memory.limit_in_bytes"))).toBe(256 * 1024 * 1024);
      const quota = Number(cgroupFile("cpu", sandbox.sandboxId, "cpu.cfs_quota_us"));
      const period = Number(cgroupFile("cpu", sandbox.sandboxId, "cpu.cfs_period_us"));
      expect(quota / period).toBe(1);
      // 384 MiB does not fit in 256 MiB: the allocation is killed, the sandbox lives on.
      const big = await sandbox.commands
        .run("python3 -c \"b = bytearray(384 * 1024 * 1024); print('allocated')\"")
        .catch((error: { exitCode?: number; stdout?: string }) => error);
      expect((big as { stdout?: string }).stdout ?? "").not.toContain("allocated");
      const small = await sandbox.commands.run("python3 -c \"b = bytearray(64 * 1024 * 1024); print('allocated')\"");
      expect(small.stdout.trim()).toBe("allocated");
    } finally {
      await sandbox.kill();
    }
  });
});
