// Queues and agents per team on the e2e server: two teams and the default team use one queue name and one agent id,
// each reaches only its own; another team's stored name is 404; the agent list shows a team its own agents, under
// the names it gave them.
import { randomBytes } from "node:crypto";
import { beforeAll, describe, expect, test } from "vitest";
import { burrowEnv, hasBurrowEnv } from "../conformance/env.js";
import { keyedApi } from "../helpers/keyed-api.js";

const maybe = hasBurrowEnv ? describe : describe.skip;
const BUS = "/burrow/v1";

interface CreatedTeam {
  teamID: string;
  adminKey: { key: string };
}

function api(key: string) {
  return keyedApi(burrowEnv().apiUrl, key);
}

maybe("queues and agents per team", () => {
  const queue = `jobs-${randomBytes(4).toString("hex")}`;
  const agent = `worker-${randomBytes(4).toString("hex")}`;
  const teams: Record<"a" | "b", CreatedTeam> = {} as Record<"a" | "b", CreatedTeam>;
  const call: Record<"a" | "b" | "admin", ReturnType<typeof api>> = {} as Record<"a" | "b" | "admin", ReturnType<typeof api>>;

  beforeAll(async () => {
    call.admin = api(burrowEnv().apiKey);
    for (const label of ["a", "b"] as const) {
      const res = await call.admin("POST", "/burrow/v1/teams", { name: `bus-${label}-${randomBytes(3).toString("hex")}` });
      expect(res.status, JSON.stringify(res.json)).toBe(201);
      teams[label] = res.json as CreatedTeam;
      call[label] = api(teams[label].adminKey.key);
    }
  });

  const consume = async (who: "a" | "b" | "admin", name = queue) => {
    const res = await call[who]("POST", `${BUS}/queues/${name}/consume`, { timeoutMs: 500 });
    if (res.status === 200) expect((await call[who]("POST", `${BUS}/queues/${name}/messages/${res.json.receipt}/ack`)).status).toBe(204);
    return res;
  };

  test("one queue name, three queues: each team consumes only what it enqueued", async () => {
    for (const who of ["a", "b", "admin"] as const) {
      const res = await call[who]("POST", `${BUS}/queues/${queue}/messages`, { data: `for-${who}` });
      expect(res.status, JSON.stringify(res.json)).toBe(201);
    }
    for (const who of ["a", "b", "admin"] as const) {
      const got = await consume(who);
      expect(got.status).toBe(200);
      expect(got.json.data).toBe(`for-${who}`);
      expect((await consume(who)).status).toBe(204);
    }
    // Team A's stored name is its own (the same queue), and 404 for B and for the default team.
    const stored = `t${teams.a.teamID.replace(/-/g, "").slice(0, 8)}-${queue}`;
    expect((await call.a("POST", `${BUS}/queues/${stored}/messages`, { data: "again" })).status).toBe(201);
    expect((await consume("a")).json.data).toBe("again");
    for (const who of ["b", "admin"] as const) {
      const refused = await call[who]("POST", `${BUS}/queues/${stored}/messages`, { data: "intrude" });
      expect(refused.status).toBe(404);
      expect(refused.json).toEqual({ code: 404, message: `queue "${stored}" not found` });
    }
    // A team's names are shorter by its namespace; past that, a clear 400.
    const long = await call.a("POST", `${BUS}/queues/${"q".repeat(57)}/messages`, { data: "x" });
    expect(long.status).toBe(400);
    expect(long.json.message).toMatch(/at most 47 characters/);
  });

  test("agents: heartbeats, keys and status per team; the list shows a team its own", async () => {
    expect((await call.a("POST", `${BUS}/agents/${agent}/heartbeat`, { group: "g" })).status).toBe(204);
    const status = await call.a("GET", `${BUS}/agents/${agent}`);
    expect(status.status).toBe(200);
    expect(status.json.agentId).toBe(agent);
    expect(JSON.stringify(status.json)).not.toMatch(/t[0-9a-f]{8}-/);
    expect((await call.b("GET", `${BUS}/agents/${agent}`)).status).toBe(404);
    expect((await call.admin("GET", `${BUS}/agents/${agent}`)).status).toBe(404);
    const stored = `t${teams.a.teamID.replace(/-/g, "").slice(0, 8)}-${agent}`;
    expect((await call.b("GET", `${BUS}/agents/${stored}`)).status).toBe(404);
    const key = await call.a("POST", `${BUS}/agents/${agent}/keys`, { publicKey: randomBytes(32).toString("base64") });
    expect(key.status, JSON.stringify(key.json)).toBe(201);
    expect(key.json.agentId).toBe(agent);
    const listA = (await call.a("GET", `${BUS}/agents`)).json as { agentId: string }[];
    expect(listA.map((s) => s.agentId)).toEqual([agent]);
    const listB = (await call.b("GET", `${BUS}/agents`)).json as { agentId: string }[];
    expect(listB).toEqual([]);
    const listAdmin = (await call.admin("GET", `${BUS}/agents`)).json as { agentId: string }[];
    expect(listAdmin.map((s) => s.agentId)).not.toContain(stored);
    expect(listAdmin.map((s) => s.agentId)).not.toContain(agent);
  });
});
