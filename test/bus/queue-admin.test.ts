// Queue depth and dead letters on the e2e server, per team: two teams and the default team use one queue name;
// each lists, inspects, requeues and drops only its own, under the name it gave; another team's stored name is 404.
import { randomBytes } from "node:crypto";
import { beforeAll, describe, expect, inject, test } from "vitest";
import { keyedApi } from "../helpers/keyed-api.js";

const env = inject("burrow");
const BUS = "/burrow/v1";

describe("queue admin per team", () => {
  const queue = `ops-${randomBytes(4).toString("hex")}`;
  const call: Record<"a" | "b" | "admin", ReturnType<typeof keyedApi>> = {} as Record<"a" | "b" | "admin", ReturnType<typeof keyedApi>>;
  const teamIds: Record<"a" | "b", string> = { a: "", b: "" };

  beforeAll(async () => {
    call.admin = keyedApi(env.apiUrl, env.apiKey);
    for (const label of ["a", "b"] as const) {
      const res = await call.admin("POST", `${BUS}/teams`, { name: `qops-${label}-${randomBytes(3).toString("hex")}` });
      expect(res.status, JSON.stringify(res.json)).toBe(201);
      teamIds[label] = res.json.teamID;
      call[label] = keyedApi(env.apiUrl, res.json.adminKey.key);
    }
  });

  /** Enqueues `data` and nacks it on every attempt until it is a dead letter. */
  async function deadLetter(who: "a" | "b" | "admin", data: string): Promise<void> {
    expect((await call[who]("POST", `${BUS}/queues/${queue}/messages`, { data })).status).toBe(201);
    for (;;) {
      const m = await call[who]("POST", `${BUS}/queues/${queue}/consume`, { timeoutMs: 3000 });
      if (m.status === 204) return;
      expect(m.status).toBe(200);
      expect((await call[who]("POST", `${BUS}/queues/${queue}/messages/${m.json.receipt}/nack`, { delayMs: 0 })).status).toBe(204);
    }
  }

  test("each team sees and operates its own queue's dead letters only", async () => {
    for (const who of ["a", "b", "admin"] as const) await deadLetter(who, `dead-${who}`);
    for (const who of ["a", "b", "admin"] as const) {
      const list = await call[who]("GET", `${BUS}/queues`);
      expect(list.status).toBe(200);
      const mine = list.json.filter((d: { name: string }) => d.name === queue);
      expect(mine).toEqual([{ name: queue, ready: 0, inFlight: 0, deadLetters: 1 }]);
      expect(JSON.stringify(list.json)).not.toMatch(/"t[0-9a-f]{8}-/);
      expect((await call[who]("GET", `${BUS}/queues/${queue}`)).json).toEqual({ name: queue, ready: 0, inFlight: 0, deadLetters: 1 });
      const dl = await call[who]("GET", `${BUS}/queues/${queue}/dead-letters`);
      expect(dl.json.items.map((i: { data: string }) => i.data)).toEqual([`dead-${who}`]);
    }
    // A's stored name and A's dead letter's id are not B's to read or drop.
    const stored = `t${teamIds.a.replace(/-/g, "").slice(0, 8)}-${queue}`;
    const aSeq = (await call.a("GET", `${BUS}/queues/${queue}/dead-letters`)).json.items[0].seq as number;
    for (const who of ["b", "admin"] as const) {
      expect((await call[who]("GET", `${BUS}/queues/${stored}/dead-letters`)).json).toEqual({ code: 404, message: `queue "${stored}" not found` });
      expect((await call[who]("DELETE", `${BUS}/queues/${queue}/dead-letters/${aSeq}`)).status).toBe(404);
      expect((await call[who]("POST", `${BUS}/queues/${queue}/dead-letters/${aSeq}/requeue`)).status).toBe(404);
    }
    // A requeues its own; B drops all of its own; the admin's is untouched.
    expect((await call.a("POST", `${BUS}/queues/${queue}/dead-letters/${aSeq}/requeue`)).status).toBe(200);
    const back = await call.a("POST", `${BUS}/queues/${queue}/consume`, { timeoutMs: 3000 });
    expect([back.json.data, back.json.attempt]).toEqual(["dead-a", 1]);
    expect((await call.a("POST", `${BUS}/queues/${queue}/messages/${back.json.receipt}/ack`)).status).toBe(204);
    expect((await call.b("DELETE", `${BUS}/queues/${queue}/dead-letters`)).json).toEqual({ dropped: 1 });
    expect((await call.a("GET", `${BUS}/queues/${queue}`)).json.deadLetters).toBe(0);
    expect((await call.b("GET", `${BUS}/queues/${queue}`)).json.deadLetters).toBe(0);
    expect((await call.admin("GET", `${BUS}/queues/${queue}`)).json.deadLetters).toBe(1);
    expect((await call.admin("DELETE", `${BUS}/queues/${queue}/dead-letters`)).json).toEqual({ dropped: 1 });
  });
});
