// Traces over OTLP/HTTP from a server of its own (the real CLI process with OTEL_EXPORTER_OTLP_ENDPOINT): a stub
// collector on the loopback decodes the JSON exports and finds a create's spans in one trace — the REST handler's
// span continuing the caller's W3C traceparent, the orchestrator's create and its steps (launch, claim, envd /init)
// below it; a template build's base and steps under the request that started it.
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { Template } from "e2b";
import { burrowDown, freePort, startServerProcess, stopServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { newTestInstance } from "../helpers/test-instance.js";

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: Array<{ key: string; value: Record<string, unknown> }>;
}

/** A collector that accepts OTLP/HTTP JSON trace exports and keeps every span with its service name. */
async function startCollector(): Promise<{ server: Server; url: string; spans: Array<OtlpSpan & { service: string }>; contentTypes: string[] }> {
  const spans: Array<OtlpSpan & { service: string }> = [];
  const contentTypes: string[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      contentTypes.push(req.headers["content-type"] ?? "");
      if (req.url !== "/v1/traces") {
        res.writeHead(404).end();
        return;
      }
      const parsed = JSON.parse(body) as {
        resourceSpans: Array<{
          resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
          scopeSpans: Array<{ spans: OtlpSpan[] }>;
        }>;
      };
      for (const rs of parsed.resourceSpans) {
        const service = rs.resource.attributes.find((a) => a.key === "service.name")?.value.stringValue ?? "";
        for (const ss of rs.scopeSpans) for (const s of ss.spans) spans.push({ ...s, service });
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, contentTypes };
}

describe("OpenTelemetry traces of a create", () => {
  const instance = newTestInstance("otel");
  let server: ServerProcess | undefined;
  let collector: Awaited<ReturnType<typeof startCollector>> | undefined;

  afterAll(async () => {
    if (server) await stopServerProcess(server, "SIGTERM");
    burrowDown(instance);
    rmSync(instance.stateDir, { recursive: true, force: true });
    await new Promise((resolve) => collector?.server.close(resolve));
  });

  it("exports REST → orchestrator → launch/claim → envd /init spans in the caller's trace", async () => {
    collector = await startCollector();
    server = await startServerProcess(instance, await freePort(), ["--pool-size", "0"], { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url });
    const traceId = randomBytes(16).toString("hex");
    const callerSpan = randomBytes(8).toString("hex");
    const res = await fetch(`${server.url}/sandboxes`, {
      method: "POST",
      headers: { "x-api-key": server.apiKey, "content-type": "application/json", traceparent: `00-${traceId}-${callerSpan}-01` },
      body: JSON.stringify({ templateID: "base", timeout: 60 }),
    });
    const created = (await res.json()) as { sandboxID: string };
    expect(res.status, JSON.stringify(created)).toBe(201);

    const names = ["POST /sandboxes", "orchestrator.create", "orchestrator.launch", "orchestrator.claim", "envd.init"];
    const inTrace = () => collector!.spans.filter((s) => s.traceId === traceId);
    for (let i = 0; i < 150 && !names.every((n) => inTrace().some((s) => s.name === n)); i++) await new Promise((r) => setTimeout(r, 100));
    const spans = inTrace();
    const byName = (name: string) => {
      const span = spans.find((s) => s.name === name);
      expect(span, `${name} in ${JSON.stringify(spans.map((s) => s.name))}`).toBeDefined();
      return span!;
    };
    const rest = byName("POST /sandboxes");
    expect(rest.parentSpanId).toBe(callerSpan);
    expect(rest.kind).toBe(2); // SERVER
    expect(rest.service).toBe("burrow-server");
    const status = rest.attributes?.find((a) => a.key === "http.response.status_code")?.value;
    expect(status).toEqual({ intValue: 201 });
    const create = byName("orchestrator.create");
    expect(create.parentSpanId).toBe(rest.spanId);
    expect(byName("orchestrator.launch").parentSpanId).toBe(create.spanId);
    const claim = byName("orchestrator.claim");
    expect(claim.parentSpanId).toBe(create.spanId);
    expect(byName("envd.init").parentSpanId).toBe(claim.spanId);
    expect(collector.contentTypes.every((t) => t.startsWith("application/json"))).toBe(true);

    const kill = await fetch(`${server.url}/sandboxes/${created.sandboxID}`, { method: "DELETE", headers: { "x-api-key": server.apiKey } });
    expect(kill.status).toBe(204);
  }, 600_000);

  it("exports a template build's steps under the request that started it", async () => {
    const name = `otel-build-${randomBytes(4).toString("hex")}`;
    const conn = { apiKey: server!.apiKey, apiUrl: server!.url, sandboxUrl: server!.url, debug: false };
    await Template.build(Template().fromTemplate("base").runCmd(`echo ${name} > /tmp/built`), name, { ...conn, onBuildLogs: () => undefined });
    const builds = () => collector!.spans.filter((s) => s.name === "template.build");
    for (let i = 0; i < 100 && builds().length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    const build = builds().at(-1);
    expect(build, JSON.stringify(collector!.spans.map((s) => s.name))).toBeDefined();
    const inTrace = () => collector!.spans.filter((s) => s.traceId === build!.traceId);
    for (let i = 0; i < 50 && !inTrace().some((s) => s.name === "template.step"); i++) await new Promise((r) => setTimeout(r, 100));
    const request = inTrace().find((s) => s.spanId === build!.parentSpanId);
    expect(request?.name).toBe("POST /v2/templates/:templateID/builds/:buildID");
    expect(inTrace().find((s) => s.name === "template.base")?.parentSpanId).toBe(build!.spanId);
    const step = inTrace().find((s) => s.name === "template.step");
    expect(step?.parentSpanId).toBe(build!.spanId);
    expect(step?.attributes?.find((a) => a.key === "burrow.step")?.value).toEqual({ stringValue: expect.stringContaining(`RUN echo ${name}`) });
    await fetch(`${server!.url}/templates/${name}`, { method: "DELETE", headers: { "x-api-key": server!.apiKey } });
  }, 600_000);
});
