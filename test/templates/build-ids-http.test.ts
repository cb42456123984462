// The template API as the Python SDK uses it: its generated client parses every id E2B's spec declares
// `format: uuid` with `UUID(...)` (builds listed by GET /templates/{id}, assigned tags, tags) and sends
// `str(uuid)` back in paths, over httpx's HTTP/1.1 pool of keep-alive connections. Each endpoint's answer is
// checked here with Python's parsing rule, on one pooled keep-alive connection for the whole sequence.
import { Agent, request } from "node:http";
import type { Socket } from "node:net";
import { gunzipSync, inflateSync } from "node:zlib";
import { afterAll, describe, expect, inject, it } from "vitest";
import { deleteTemplate } from "./delete-template.js";

const env = inject("burrow");
const suffix = Math.random().toString(36).slice(2, 8);
const name = `pyhttp-${suffix}`;
const agent = new Agent({ keepAlive: true, maxSockets: 1 });
const sockets = new Set<Socket>();

afterAll(async () => {
  agent.destroy();
  await deleteTemplate(env, name);
});

/** Python's `UUID(value)`: braces, `urn:uuid:` and hyphens are dropped, 32 hex digits must remain. Returns `str()`. */
function pythonUuid(value: unknown): string {
  if (typeof value !== "string") throw new Error(`UUID() of ${JSON.stringify(value)}: not a string`);
  const hex = value.replace("urn:", "").replace("uuid:", "").replace(/^\{+|\}+$/g, "").replaceAll("-", "");
  if (!/^[0-9a-fA-F]{32}$/.test(hex)) throw new Error(`badly formed hexadecimal UUID string: ${value}`);
  const h = hex.toLowerCase();
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** A UUID field the SDK parses and later sends back as str(): it must round-trip unchanged. */
function expectUuid(value: unknown): string {
  expect(pythonUuid(value)).toBe(value);
  return value as string;
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

/** One request the way httpx sends it: JSON with a Content-Length, keep-alive, gzip accepted. */
function call(method: string, path: string, body?: unknown): Promise<Answer> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = request(
      `${env.apiUrl}${path}`,
      {
        method,
        agent,
        headers: {
          accept: "*/*",
          "accept-encoding": "gzip, deflate",
          connection: "keep-alive",
          "user-agent": "e2b-python-sdk/2.0.0",
          "x-api-key": env.apiKey,
          ...(payload ? { "content-type": "application/json", "content-length": String(payload.length) } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          try {
            expect(res.httpVersion).toBe("1.1");
            expect(res.headers.connection ?? "keep-alive").not.toMatch(/close/i);
            let raw = Buffer.concat(chunks);
            if (res.headers["content-encoding"] === "gzip") raw = gunzipSync(raw);
            else if (res.headers["content-encoding"] === "deflate") raw = inflateSync(raw);
            const text = raw.toString("utf8");
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text === "" ? undefined : JSON.parse(text) });
          } catch (error) {
            reject(error as Error);
          }
        });
        res.on("error", reject);
      },
    );
    req.on("socket", (socket) => sockets.add(socket));
    req.on("error", reject);
    req.end(payload);
  });
}

async function buildOnce(tags?: string[]): Promise<{ templateID: string; buildID: string }> {
  const created = await call("POST", "/v3/templates", { name, ...(tags ? { tags } : {}), cpuCount: 1, memoryMB: 512 });
  expect(created.status).toBe(202);
  const { templateID, buildID } = created.body as { templateID: string; buildID: string };
  expectUuid(buildID);
  const started = await call("POST", `/v2/templates/${templateID}/builds/${buildID}`, {
    fromTemplate: "base",
    steps: [{ type: "ENV", args: ["PY", String(tags?.length ?? 0)], force: false }],
    force: false,
  });
  expect(started.status).toBe(202);
  expect(started.headers["content-length"]).toBe("0");
  let offset = 0;
  for (let i = 0; i < 600; i++) {
    const status = await call("GET", `/templates/${templateID}/builds/${buildID}/status?logsOffset=${offset}`);
    expect(status.status).toBe(200);
    const page = status.body as { buildID: string; templateID: string; status: string; logEntries: unknown[] };
    expect(expectUuid(page.buildID)).toBe(buildID);
    expect(page.templateID).toBe(templateID);
    offset += page.logEntries.length;
    if (page.status === "ready") return { templateID, buildID };
    expect(page.status).not.toBe("error");
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error("build did not finish");
}

describe("template API ids over HTTP/1.1 keep-alive, as the Python SDK parses them", () => {
  it("every build id in builds, status, tags and the builds list is a UUID that round-trips", { timeout: 300_000 }, async () => {
    const first = await buildOnce(["py"]);
    const second = await buildOnce();
    expect(second.templateID).toBe(first.templateID);
    const { templateID } = first;

    // AssignedTemplateTags.buildID (format: uuid).
    const assigned = await call("POST", "/templates/tags", { target: `${name}:py`, tags: ["pyprod"] });
    expect(assigned.status).toBe(201);
    expect(expectUuid((assigned.body as { buildID: string }).buildID)).toBe(first.buildID);

    // TemplateTag.buildID (format: uuid).
    const tags = await call("GET", `/templates/${templateID}/tags`);
    expect(tags.status).toBe(200);
    const byTag = Object.fromEntries((tags.body as { tag: string; buildID: string }[]).map((t) => [t.tag, expectUuid(t.buildID)]));
    expect(byTag).toEqual({ py: first.buildID, pyprod: first.buildID, default: second.buildID });

    // TemplateWithBuilds.builds[].buildID (format: uuid), newest first, paged by cursor.
    const listed = await call("GET", `/templates/${templateID}`);
    expect(listed.status).toBe(200);
    const template = listed.body as { templateID: string; names: string[]; public: boolean; spawnCount: number; lastSpawnedAt: null; builds: { buildID: string; status: string; cpuCount: number; memoryMB: number; createdAt: string }[] };
    expect(template).toMatchObject({ templateID, names: [name], public: false, spawnCount: 0, lastSpawnedAt: null });
    expect(template.builds.map((b) => expectUuid(b.buildID))).toEqual([second.buildID, first.buildID]);
    for (const b of template.builds) {
      expect(b).toMatchObject({ status: "ready", cpuCount: 1, memoryMB: 512 });
      expect(Number.isNaN(Date.parse(b.createdAt))).toBe(false);
    }
    const page1 = await call("GET", `/templates/${templateID}?limit=1`);
    expect((page1.body as typeof template).builds.map((b) => b.buildID)).toEqual([second.buildID]);
    const token = page1.headers["x-next-token"];
    expect(typeof token).toBe("string");
    const page2 = await call("GET", `/templates/${templateID}?limit=1&nextToken=${encodeURIComponent(token as string)}`);
    expect((page2.body as typeof template).builds.map((b) => b.buildID)).toEqual([first.buildID]);
    expect(page2.headers["x-next-token"]).toBeUndefined();

    // Template.buildID in the list (a plain string in the spec, a UUID all the same).
    const all = await call("GET", "/templates");
    const mine = (all.body as { templateID: string; buildID: string }[]).find((t) => t.templateID === templateID);
    expect(expectUuid(mine?.buildID)).toBe(second.buildID);

    // The Python SDK sends back str(UUID): a build found by it, in either case, and by name:<build id>.
    const upper = await call("GET", `/templates/${templateID}/builds/${first.buildID.toUpperCase()}/status`);
    expect(upper.status).toBe(200);
    expect((upper.body as { buildID: string }).buildID).toBe(first.buildID);
    const alias = await call("GET", `/templates/aliases/${encodeURIComponent(`${name}:${first.buildID}`)}`);
    expect(alias.status).toBe(200);

    // Errors in E2B's shape, and the connection survives them.
    const unknown = await call("GET", `/templates/nosuch${suffix}`);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ code: 404, message: expect.stringMatching(/not found/) });
    const badToken = await call("GET", `/templates/${templateID}?nextToken=garbage`);
    expect(badToken.status).toBe(400);
    expect(badToken.body).toMatchObject({ code: 400 });
    const uuidTag = await call("POST", "/templates/tags", { target: name, tags: [first.buildID] });
    expect(uuidTag.status).toBe(400);
    expect(uuidTag.body).toMatchObject({ code: 400, message: expect.stringMatching(/cannot be a UUID/) });
    const removed = await call("DELETE", "/templates/tags", { name, tags: ["pyprod"] });
    expect(removed.status).toBe(204);

    // All of it over one pooled keep-alive connection.
    expect(sockets.size).toBe(1);
  });
});
