// Prometheus metrics after real operations on the real server: sandboxes by state, creates and the orchestrator's
// create time by source (pool claim or launch), per-sandbox CPU/memory/disk series that appear with a sandbox and go
// with it, gateway upstream errors by cause, template builds by status.
import { randomBytes } from "node:crypto";
import { afterAll, describe, expect, test } from "vitest";
import { Sandbox, Template } from "e2b";
import { burrowEnv, hasBurrowEnv, sdkOpts } from "../conformance/env.js";
import { deleteTemplate } from "../templates/delete-template.js";

const maybe = hasBurrowEnv ? describe : describe.skip;

async function scrape(): Promise<string> {
  const res = await fetch(`${burrowEnv().apiUrl}/metrics`);
  expect(res.status).toBe(200);
  return res.text();
}

/** The value of one series (exact labels as rendered, in prom-client's order), or undefined when absent. */
function value(text: string, name: string, labels = ""): number | undefined {
  const series = labels ? `${name}{${labels}}` : name;
  for (const line of text.split("\n")) {
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  }
  return undefined;
}

const sumOf = (text: string, name: string) =>
  text.split("\n").filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `)).reduce((n, l) => n + Number(l.split(" ").pop()), 0);

async function api(method: string, path: string, body?: unknown): Promise<Response> {
  const env = burrowEnv();
  return fetch(`${env.apiUrl}${path}`, {
    method,
    headers: { "x-api-key": env.apiKey, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
}

const suffix = randomBytes(4).toString("hex");
const templateName = `metrics-build-${suffix}`;

maybe("Prometheus metrics move with real operations", () => {
  afterAll(async () => {
    await deleteTemplate(burrowEnv(), templateName);
  });

  test("sandboxes by state, creates, claim time by source, per-sandbox series from create to kill", async () => {
    const before = await scrape();
    const running0 = value(before, "burrow_sandboxes", 'state="running"') ?? 0;
    const paused0 = value(before, "burrow_sandboxes", 'state="paused"') ?? 0;
    const creates0 = value(before, "burrow_sandbox_creates_total", 'result="ok"') ?? 0;
    const claims0 = sumOf(before, "burrow_sandbox_claim_duration_seconds_count");

    const sandbox = await Sandbox.create("base", { ...sdkOpts(), timeoutMs: 120_000 });
    try {
      const created = await scrape();
      expect(value(created, "burrow_sandboxes", 'state="running"')).toBe(running0 + 1);
      expect(value(created, "burrow_sandbox_creates_total", 'result="ok"')).toBe(creates0 + 1);
      expect(sumOf(created, "burrow_sandbox_claim_duration_seconds_count")).toBe(claims0 + 1);
      expect(created).toMatch(/burrow_sandbox_claim_duration_seconds_bucket\{le="\+Inf",source="(pool|launch)"\}/);

      // The first sample is taken when samples are first asked for (or at the next sweep); the gauges get it too.
      const info = (await (await api("GET", `/sandboxes/${sandbox.sandboxId}`)).json()) as { templateID: string };
      expect((await api("GET", `/sandboxes/${sandbox.sandboxId}/metrics`)).status).toBe(200);
      const sampled = await scrape();
      const labels = `sandbox_id="${sandbox.sandboxId}",template="${info.templateID}"`;
      expect(value(sampled, "burrow_sandbox_memory_used_bytes", labels)).toBeGreaterThan(0);
      expect(value(sampled, "burrow_sandbox_cpu_used_percent", labels)).toBeGreaterThanOrEqual(0);
      expect(value(sampled, "burrow_sandbox_disk_used_bytes", labels)).toBeGreaterThanOrEqual(0);

      await sandbox.pause();
      const paused = await scrape();
      expect(value(paused, "burrow_sandboxes", 'state="paused"')).toBe(paused0 + 1);
      expect(value(paused, "burrow_sandboxes", 'state="running"')).toBe(running0);
      await Sandbox.connect(sandbox.sandboxId, sdkOpts());

      await sandbox.kill();
      const killed = await scrape();
      expect(value(killed, "burrow_sandboxes", 'state="running"')).toBe(running0);
      expect(value(killed, "burrow_sandboxes", 'state="paused"')).toBe(paused0);
      // Bounded: an ended sandbox's series are gone.
      expect(killed).not.toContain(sandbox.sandboxId);
    } finally {
      await sandbox.kill().catch(() => undefined);
    }
  });

  test("gateway upstream errors by cause: a port nothing listens on is `refused`", async () => {
    const sandbox = await Sandbox.create("base", { ...sdkOpts(), timeoutMs: 60_000 });
    try {
      const before = value(await scrape(), "burrow_gateway_upstream_errors_total", 'cause="refused"') ?? 0;
      const res = await fetch(`${burrowEnv().sandboxUrl}/`, {
        headers: { "e2b-sandbox-id": sandbox.sandboxId, "e2b-sandbox-port": "4567" },
      });
      expect(res.status).toBe(502);
      await res.arrayBuffer();
      expect(value(await scrape(), "burrow_gateway_upstream_errors_total", 'cause="refused"')).toBeGreaterThanOrEqual(before + 1);
    } finally {
      await sandbox.kill();
    }
  });

  test("template builds by status count a new build when it is ready", async () => {
    const before = value(await scrape(), "burrow_template_builds", 'status="ready"') ?? 0;
    await Template.build(Template().fromTemplate("base").runCmd(`echo ${suffix} > /tmp/m`), templateName, {
      ...sdkOpts(),
      onBuildLogs: () => undefined,
    });
    const after = await scrape();
    expect(value(after, "burrow_template_builds", 'status="ready"')).toBe(before + 1);
    expect(value(after, "burrow_template_builds", 'status="building"')).toBe(0);
  }, 300_000);
});
