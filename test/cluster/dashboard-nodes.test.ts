// The dashboard's server page on a node of a cluster (one CLI node on a real nats-server, in real Chromium): the
// cluster's nodes with their state — this node up, a node whose heartbeats stopped down —, and a cordon set and
// cleared from the page, as GET /burrow/v1/nodes then reports. The single-machine server page shows no such card
// (test/dashboard/server.test.ts).
import { afterAll, beforeAll, expect, it } from "vitest";
import { connect } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { NatsServerFixture } from "../../packages/bus/test/helpers/nats-server.js";
import { openDashboard, type DashboardPage } from "../dashboard/browser-page.js";
import { freePort, startServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { tearDownServers } from "../helpers/tear-down.js";
import { newTestInstance } from "../helpers/test-instance.js";

const instance = newTestInstance("clud");
let nats: NatsServerFixture;
let server: ServerProcess | undefined;
let dash: DashboardPage | undefined;

beforeAll(async () => {
  nats = await NatsServerFixture.start();
  server = await startServerProcess(instance, await freePort(), ["--pool-size", "0", "--cluster", `nats://${nats.url}`, "--node-name", "dash-a"], {
    BURROW_CLUSTER_HEARTBEAT_MS: "300",
    BURROW_CLUSTER_DOWN_AFTER_MS: "1500",
  });
  // A node that joined and then stopped beating, as one whose machine died: its record stays, and goes down.
  const nc = await connect({ servers: `nats://${nats.url}` });
  try {
    const nodes = await new Kvm(nc).open("burrow_nodes");
    const record = {
      v: 2, name: "node-gone", apiUrl: "http://127.0.0.1:9", version: "0.1.0", startedAt: new Date().toISOString(), cordoned: false,
      heartbeatAt: new Date().toISOString(), load: { freeMemoryBytes: 1 << 30, runningSandboxes: 0, poolFill: [], capacity: 10, templates: [] },
    };
    await nodes.put("node-gone", JSON.stringify(record));
  } finally {
    await nc.close();
  }
  // Until it is judged down, lists fan out to it and fail (503, by design: a list missing a node's sandboxes would
  // read as their end), and the dashboard's first page is the sandbox list.
  const deadline = Date.now() + 30_000;
  for (;;) {
    const res = await fetch(`${server.url}/burrow/v1/nodes`, { headers: { "x-api-key": server.apiKey } });
    const { nodes } = (await res.json()) as { nodes: { name: string; status: string }[] };
    if (nodes.find((n) => n.name === "node-gone")?.status === "down") break;
    if (Date.now() > deadline) throw new Error(`node-gone not down in 30 s: ${JSON.stringify(nodes)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  dash = await openDashboard({ apiUrl: server.url, sandboxUrl: server.url, apiKey: server.apiKey, stateDir: instance.stateDir, instance: instance.instance, subnet: instance.subnet, imageDir: "" });
}, 300_000);

afterAll(async () => {
  await tearDownServers([{ instance, server }], { before: [() => dash?.close()], after: [() => nats?.stop()] });
});

it("lists the cluster's nodes with their state and cordons one from the page", { timeout: 120_000 }, async () => {
  const { page } = dash!;
  await dash!.open("server");
  await page.locator("#cluster-nodes").waitFor({ timeout: 60_000 });
  expect(await page.locator(".server .toolbar .count").innerText()).toContain("node dash-a of a cluster");
  const self = page.locator('#cluster-nodes tr[data-node="dash-a"]');
  const gone = page.locator('#cluster-nodes tr[data-node="node-gone"]');
  await expect.poll(() => self.getAttribute("data-status"), { timeout: 15_000 }).toBe("up");
  expect(await gone.getAttribute("data-status")).toBe("down");
  expect(await page.locator("#cluster-nodes").innerText()).toContain("1 of 2 up");

  await self.locator("button.cordon").click();
  await expect.poll(() => self.getAttribute("data-cordoned"), { timeout: 15_000 }).toBe("true");
  const listed = async () => {
    const res = await fetch(`${server!.url}/burrow/v1/nodes`, { headers: { "x-api-key": server!.apiKey } });
    return ((await res.json()) as { nodes: { name: string; cordoned: boolean }[] }).nodes.find((n) => n.name === "dash-a")?.cordoned;
  };
  expect(await listed()).toBe(true);
  await dash!.shot("cluster-nodes");

  await self.locator("button.cordon").click();
  await expect.poll(() => self.getAttribute("data-cordoned"), { timeout: 15_000 }).toBe("false");
  expect(await listed()).toBe(false);
  expect(dash!.errors).toEqual([]);
});
