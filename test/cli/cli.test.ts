// The `burrow` command against the real server: every sandbox verb, with --json for scripts, and `shell`
// driving a real PTY through envd.
import { describe, expect, inject, it } from "vitest";
import { runBurrow, type CliResult } from "./run-burrow.js";

const env = inject("burrow");
const clientEnv = { ...process.env, E2B_API_URL: env.apiUrl, E2B_SANDBOX_URL: env.sandboxUrl, E2B_API_KEY: env.apiKey };

function burrow(args: string[], input?: string): Promise<CliResult> {
  return runBurrow(args, { env: clientEnv, ...(input !== undefined ? { input } : {}) });
}

describe("burrow CLI", () => {
  it("creates, lists, execs in and kills a sandbox with --json output", async () => {
    // A metadata value with the characters the list filter's encoding must survive.
    const note = "a&b=c d%";
    const created = await burrow(["sandbox", "create", "--json", "--metadata", "suite=cli", "--metadata", `note=${note}`, "--env", "GREETING=hello"]);
    expect(created.code, created.stderr).toBe(0);
    const { sandboxId } = JSON.parse(created.stdout) as { sandboxId: string };
    expect(sandboxId).toMatch(/^[a-z0-9]{20}$/);
    try {
      const listed = await burrow(["sandbox", "list", "--json", "--metadata", "suite=cli", "--metadata", `note=${note}`]);
      expect(listed.code, listed.stderr).toBe(0);
      const rows = JSON.parse(listed.stdout) as { sandboxId: string; state: string; metadata: Record<string, string> }[];
      expect(rows.map((r) => r.sandboxId)).toEqual([sandboxId]);
      expect(rows[0]).toMatchObject({ state: "running", metadata: { suite: "cli", note } });
      const other = await burrow(["sandbox", "list", "--json", "--metadata", "suite=cli", "--metadata", "note=a"]);
      expect(JSON.parse(other.stdout)).toEqual([]);
      const table = await burrow(["sandbox", "ls", "--state", "running"]);
      expect(table.stdout).toMatch(/^SANDBOXID\s+TEMPLATEID\s+STATE/);
      expect(table.stdout).toContain(sandboxId);

      const exec = await burrow(["sandbox", "exec", sandboxId, "--json", "--", "sh", "-c", 'echo "$GREETING from $(whoami)"; exit 3']);
      expect(exec.code).toBe(3);
      expect(JSON.parse(exec.stdout)).toMatchObject({ exitCode: 3, stdout: "hello from user\n" });

      const streamed = await burrow(["sandbox", "exec", sandboxId, "--user", "root", "--", "whoami"]);
      expect(streamed.code).toBe(0);
      expect(streamed.stdout).toBe("root\n");
    } finally {
      const killed = await burrow(["sandbox", "kill", "--json", sandboxId]);
      expect(killed.code, killed.stderr).toBe(0);
      expect(JSON.parse(killed.stdout)).toEqual([{ sandboxId, killed: true }]);
    }
    const again = await burrow(["sandbox", "kill", sandboxId]);
    expect(again.code).toBe(1);
    expect(again.stdout).toContain("not found");
  });

  it("opens an interactive shell over the PTY API", async () => {
    const created = await burrow(["sandbox", "create", "--json"]);
    const { sandboxId } = JSON.parse(created.stdout) as { sandboxId: string };
    try {
      const shell = await burrow(["sandbox", "shell", sandboxId], "echo shell-$((6*7)) && tty && exit 5\n");
      expect(shell.stdout).toContain("shell-42");
      expect(shell.stdout).toMatch(/\/dev\/pts\/\d+/);
      expect(shell.code).toBe(5);
    } finally {
      await burrow(["sandbox", "kill", sandboxId]);
    }
  });

  it("pauses and resumes a sandbox, keeping its processes", async () => {
    const created = await burrow(["sandbox", "create", "--json"]);
    const { sandboxId } = JSON.parse(created.stdout) as { sandboxId: string };
    try {
      await burrow(["sandbox", "exec", sandboxId, "--", "sh", "-c", "sleep 600 > /dev/null 2>&1 &"]);
      const paused = await burrow(["sandbox", "pause", "--json", sandboxId]);
      expect(paused.code, paused.stderr).toBe(0);
      expect(JSON.parse(paused.stdout)).toEqual([{ sandboxId, paused: true }]);
      const listed = JSON.parse((await burrow(["sandbox", "list", "--json", "--state", "paused"])).stdout) as { sandboxId: string }[];
      expect(listed.map((r) => r.sandboxId)).toContain(sandboxId);
      expect((await burrow(["sandbox", "pause", sandboxId])).stdout).toContain("already paused");
      const resumed = await burrow(["sandbox", "resume", sandboxId]);
      expect(resumed.code, resumed.stderr).toBe(0);
      const ps = await burrow(["sandbox", "exec", sandboxId, "--", "pgrep", "-x", "sleep"]);
      expect(ps.stdout.trim()).toMatch(/^\d+$/);
    } finally {
      await burrow(["sandbox", "kill", sandboxId]);
    }
  });

  it("fails with one clear line on bad usage and unknown sandboxes", async () => {
    const usage = await burrow(["sandbox", "frobnicate"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/^burrow: unknown sandbox command 'frobnicate'/);
    const missing = await burrow(["sandbox", "exec", "doesnotexist000000000", "--", "true"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe("burrow: sandbox doesnotexist000000000 not found\n");
    for (const verb of ["pause", "resume"]) {
      const result = await burrow(["sandbox", verb, "doesnotexist000000000"]);
      expect(result.code).toBe(1);
      expect(result.stderr).toBe("burrow: sandbox doesnotexist000000000 not found\n");
    }
    const badKey = await runBurrow(["sandbox", "list"], { env: { ...clientEnv, E2B_API_KEY: "e2b_0000" } });
    expect(badKey.code).toBe(1);
    expect(badKey.stderr).toMatch(/^burrow: GET \/v2\/sandboxes failed \(401\): /);
  });
});
