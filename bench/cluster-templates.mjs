// Templates everywhere (server/src/cluster/cluster-templates.ts): two Burrow nodes in this process on one nats-server.
// Small templates (base plus one RUN step writing BENCH_TEMPLATE_MB of random bytes) are built on node A; the time
// from the build's answer until its record is in burrow_templates is the publish (tar, sha256, upload). Then, with A
// cordoned so that creates through B stay on B, each template's first create on B (its layers fetched from the
// object store, verified and unpacked) beside its second create on B (the template now local): same node, same
// route, same template, so the difference is the fetch. Both nodes share this process and the machine's two cores.
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { Sandbox, Template } from "e2b";
import { connect } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { median, report } from "./lib/stats.mjs";
import { nodeLog, startNats, startNode } from "./cluster.mjs";

const TEMPLATES = Number(process.env.BENCH_TEMPLATES_EVERYWHERE ?? 3);
const LAYER_MB = Number(process.env.BENCH_TEMPLATE_MB ?? 32);

/** The nodes' own timings, from their log lines: tar + sha256 + upload + record; fetch + verify + unpack + save. */
const nodeTimes = { published: [], fetched: [] };
const logStream = nodeLog((entry) => {
  if (entry.msg === "published a template to the cluster") nodeTimes.published.push(entry.ms);
  if (entry.msg === "fetched a template from the cluster") nodeTimes.fetched.push(entry.ms);
});

async function timed(fn) {
  const t0 = performance.now();
  const value = await fn();
  return { ms: performance.now() - t0, value };
}

export async function runClusterTemplateBenchmarks() {
  process.stdout.write(`\n== cluster: templates from the object store (2 nodes in one process, 1 nats-server, ${LAYER_MB} MB layer) ==\n`);
  const apiKey = `e2b_${randomBytes(20).toString("hex")}`;
  const nats = await startNats();
  const nc = await connect({ servers: nats.url });
  const nodes = [];
  try {
    nodes.push(await startNode("tpl-a", nats.url, apiKey, { log: logStream, templates: true }));
    nodes.push(await startNode("tpl-b", nats.url, apiKey, { log: logStream, templates: true }));
    const [a, b] = nodes;
    const kv = await new Kvm(nc).open("burrow_templates");
    const published = [];
    const names = [];
    for (let i = 0; i < TEMPLATES; i++) {
      const name = `bench-everywhere-${randomBytes(3).toString("hex")}`;
      const template = Template()
        .fromTemplate("base")
        .runCmd(`head -c ${LAYER_MB}M /dev/urandom > /opt/blob && echo ${name} > /opt/name`, { user: "root" });
      const info = await Template.build(template, name, a.opts);
      const { ms } = await timed(async () => {
        while ((await kv.get(info.templateId))?.operation !== "PUT") await new Promise((r) => setTimeout(r, 20));
      });
      published.push(ms);
      names.push(name);
    }
    const cordon = await fetch(`${a.url}/burrow/v1/nodes/tpl-a/cordon`, { method: "POST", headers: { "X-API-Key": apiKey } });
    if (!cordon.ok) throw new Error(`cordon: ${cordon.status}`);
    // B's record mirror sees the cordon within a heartbeat.
    await new Promise((r) => setTimeout(r, 4000));
    const fetched = [];
    const local = [];
    for (const name of names) {
      const first = await timed(() => Sandbox.create(name, { ...b.opts, timeoutMs: 120_000 }));
      const second = await timed(() => Sandbox.create(name, { ...b.opts, timeoutMs: 120_000 }));
      fetched.push(first.ms);
      local.push(second.ms);
      await first.value.kill();
      await second.value.kill();
    }
    report(`publish by node A (${LAYER_MB} MB layer), p50`, median(nodeTimes.published), "ms", undefined, undefined);
    report("  build answered → record in the bucket, p50", median(published), "ms", undefined, undefined);
    report("fetch by node B (verify, unpack, save), p50", median(nodeTimes.fetched), "ms", undefined, undefined);
    report("first create on B (layers fetched), p50", median(fetched), "ms", median(local), "second create on B (local)");
    report("  added by the fetch, p50", median(fetched) - median(local), "ms");
  } finally {
    for (const node of nodes.reverse()) {
      await node.server.close();
      await node.orchestrator.shutdown();
      rmSync(node.stateDir, { recursive: true, force: true });
    }
    await nc.close();
    await nats.stop();
  }
}
