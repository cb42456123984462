// `burrow team` and `burrow key` against the e2e server, as the operator runs them on the server machine: no
// E2B_API_KEY, the instance admin key read from the state directory.
import { randomBytes } from "node:crypto";
import { describe, expect, test } from "vitest";
import { runBurrow } from "../cli/run-burrow.js";
import { burrowEnv, hasBurrowEnv } from "../conformance/env.js";

const maybe = hasBurrowEnv ? describe : describe.skip;

maybe("burrow team / burrow key", () => {
  test("the operator creates a team, lists it, makes a key for it and revokes it; a team key cannot create teams", async () => {
    const env = burrowEnv();
    const { E2B_API_KEY: _unset, ...base } = process.env;
    const operator = { ...base, E2B_API_URL: env.apiUrl, E2B_SANDBOX_URL: env.sandboxUrl, BURROW_STATE_DIR: env.stateDir };
    const name = `cli-${randomBytes(3).toString("hex")}`;

    const created = await runBurrow(["team", "create", name, "--json"], { env: operator });
    expect(created.code, created.stderr).toBe(0);
    const team = JSON.parse(created.stdout) as { teamID: string; adminKey: { key: string } };
    expect(team.adminKey.key).toMatch(/^e2b_[0-9a-f]{40}$/);

    const listed = await runBurrow(["team", "list"], { env: operator });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(team.teamID);
    expect(listed.stdout).toContain(name);

    const key = await runBurrow(["key", "create", "worker", "--team", team.teamID, "--json"], { env: operator });
    expect(key.code, key.stderr).toBe(0);
    const made = JSON.parse(key.stdout) as { id: string; key: string; teamID: string; role: string };
    expect(made).toMatchObject({ teamID: team.teamID, role: "member" });

    // The team's own admin key lists its keys (masked: the plaintext never appears again).
    const asTeam = { ...operator, E2B_API_KEY: team.adminKey.key };
    const keys = await runBurrow(["key", "list"], { env: asTeam });
    expect(keys.code, keys.stderr).toBe(0);
    expect(keys.stdout).toContain(made.id);
    expect(keys.stdout).not.toContain(made.key);
    const refused = await runBurrow(["team", "create", `${name}-2`], { env: asTeam });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("instance admin");

    const revoked = await runBurrow(["key", "revoke", made.id], { env: asTeam });
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stdout).toContain("revoked");
    const withRevoked = await runBurrow(["sandbox", "list"], { env: { ...operator, E2B_API_KEY: made.key } });
    expect(withRevoked.code).not.toBe(0);
    expect(withRevoked.stderr).toContain("invalid API key");
    const again = await runBurrow(["key", "revoke", made.id], { env: asTeam });
    expect(again.code).toBe(1);
  });
});
