// `burrow sandbox checkpoint|tree|rollback|branch` against the real server of the global setup.
import { describe, expect, inject, it } from "vitest";
import { runBurrow, type CliResult } from "./run-burrow.js";

const env = inject("burrow");
const clientEnv = { ...process.env, E2B_API_URL: env.apiUrl, E2B_SANDBOX_URL: env.sandboxUrl, E2B_API_KEY: env.apiKey };

function burrow(args: string[]): Promise<CliResult> {
  return runBurrow(args, { env: clientEnv });
}

describe("burrow sandbox checkpoints", () => {
  it("checkpoints, shows the tree, rolls back and branches", async () => {
    const created = await burrow(["sandbox", "create", "--json"]);
    const { sandboxId } = JSON.parse(created.stdout) as { sandboxId: string };
    const started = [sandboxId];
    try {
      await burrow(["sandbox", "exec", sandboxId, "--", "sh", "-c", "echo one > /home/user/f"]);
      const first = await burrow(["sandbox", "checkpoint", sandboxId, "--label", "one"]);
      expect(first.code, first.stderr).toBe(0);
      const firstId = first.stdout.trim();
      expect(firstId).toMatch(/^[a-z0-9]{20}$/);
      await burrow(["sandbox", "exec", sandboxId, "--", "sh", "-c", "echo two > /home/user/f"]);
      const second = await burrow(["sandbox", "checkpoint", sandboxId, "--json"]);
      const secondId = (JSON.parse(second.stdout) as { checkpointID: string; parentID: string }).checkpointID;
      expect(JSON.parse(second.stdout)).toMatchObject({ parentID: firstId, contents: "files" });

      const tree = await burrow(["sandbox", "tree", sandboxId]);
      expect(tree.code, tree.stderr).toBe(0);
      const lines = tree.stdout.trimEnd().split("\n");
      expect(lines[0]).toMatch(new RegExp(`^  ${firstId} .*"one"$`));
      // The child is indented under its parent and marked as current.
      expect(lines[1]).toMatch(new RegExp(`^\\*   ${secondId} `));

      const rolled = await burrow(["sandbox", "rollback", sandboxId, firstId]);
      expect(rolled.code, rolled.stderr).toBe(0);
      expect((await burrow(["sandbox", "exec", sandboxId, "--", "cat", "/home/user/f"])).stdout).toBe("one\n");

      const branched = await burrow(["sandbox", "branch", secondId, "--count", "2", "--json"]);
      expect(branched.code, branched.stderr).toBe(0);
      const rows = JSON.parse(branched.stdout) as { sandbox: string; error: string }[];
      expect(rows.map((r) => r.error)).toEqual(["", ""]);
      for (const row of rows) {
        started.push(row.sandbox);
        expect((await burrow(["sandbox", "exec", row.sandbox, "--", "cat", "/home/user/f"])).stdout).toBe("two\n");
      }

      const missing = await burrow(["sandbox", "branch", "nosuchcheckpoint"]);
      expect(missing.code).not.toBe(0);
      expect(missing.stderr).toContain("not found");
      const usage = await burrow(["sandbox", "rollback", sandboxId]);
      expect(usage.code).toBe(2);
    } finally {
      await burrow(["sandbox", "kill", ...started]);
    }
    // A dozen CLI processes, a rollback (a cold boot) and two children: generous on a loaded two-core machine.
  }, 180_000);
});
