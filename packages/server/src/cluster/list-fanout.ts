// Sandbox lists for the whole cluster: the same request (the caller's key, filters and cursor) goes to every node
// that is up, this one included, marked forwarded so that each answers from its own sandboxes; the answers are merged
// in the list's order. E2B's cursor is a position in that order (startedAt, then id; api/sandboxes/list-filters.ts),
// not a node's, so one cursor pages through every node at once. A node that is down is left out: its sandboxes are
// reported lost (lost-sweep.ts) and lists omit them, "lost" being no E2B state. An up node that fails the request
// fails the list, since a list silently missing a node's sandboxes would read as their end.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "pino";
import { sendJson } from "../gateway/responses.js";
import type { ForwardSigning } from "./forwarded-header.js";
import type { Membership } from "./membership.js";

/** Per node: its whole answer must arrive within this, or the list fails (503) rather than hang. */
const NODE_TIMEOUT_MS = 30_000;

interface Listed {
  sandboxID: string;
  startedAt: string;
  [field: string]: unknown;
}

export function isListRequest(req: IncomingMessage): boolean {
  if (req.method !== "GET") return false;
  const path = (req.url ?? "").split("?")[0];
  return path === "/v2/sandboxes" || path === "/sandboxes";
}

/** Request headers passed on to each node: all but the connection's own and the body's. */
function passedHeaders(req: IncomingMessage, signing: ForwardSigning, to: string): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || ["host", "connection", "content-length", "transfer-encoding", "keep-alive", "upgrade"].includes(name)) continue;
    headers.set(name, Array.isArray(value) ? value.join(", ") : value);
  }
  for (const [name, value] of Object.entries(signing.headers("GET", req.url ?? "/", to))) headers.set(name, value);
  return headers;
}

export async function fanOutList(req: IncomingMessage, res: ServerResponse, membership: Membership, logger: Logger): Promise<void> {
  req.resume();
  try {
    const url = new URL(req.url ?? "/", "http://node.invalid");
    const v2 = url.pathname === "/v2/sandboxes";
    const me = membership.nodeName;
    const nodes = membership.list().filter((n) => n.status === "up" || n.name === me);
    const answers = await Promise.all(
      nodes.map(async (node) => {
        const answer = await fetch(`${node.apiUrl}${req.url}`, { headers: passedHeaders(req, membership.signing, node.name), signal: AbortSignal.timeout(NODE_TIMEOUT_MS) }).then(
          async (r) => ({ node: node.name, status: r.status, headers: r.headers, body: await r.text() }),
          (err: unknown) => ({ node: node.name, status: 0, headers: new Headers(), body: String(err) }),
        );
        return answer;
      }),
    );
    // This node's refusal (a bad key, a bad filter) is the answer, in its own words.
    const own = answers.find((a) => a.node === me);
    if (own && own.status !== 200) return sendRaw(res, own.status, own.body);
    // Keys are still each node's own (not in the cluster's state yet): a key another node does not know made nothing
    // there, since creates stay on the node they were sent to, so that node has nothing of the caller's to list.
    const answered = answers.filter((a) => a.status !== 401);
    const failed = answered.find((a) => a.status !== 200);
    if (failed) {
      logger.warn({ node: failed.node, status: failed.status, body: failed.body.slice(0, 300) }, "a node failed a sandbox list");
      return sendJson(res, 503, JSON.stringify({ code: 503, message: `node ${failed.node} did not answer the sandbox list (${failed.status || failed.body}); retry` }));
    }
    const order = url.searchParams.get("order") === "asc" ? 1 : -1;
    const merged = answered.flatMap((a) => JSON.parse(a.body) as Listed[]).sort((a, b) => order * compareListed(a, b));
    const limit = v2 ? Number(url.searchParams.get("limit") ?? 100) : Infinity;
    const page = merged.slice(0, limit);
    const headers: Record<string, string> = {};
    if (v2 && (merged.length > limit || answered.some((a) => a.headers.has("x-next-token"))) && page.length > 0) {
      headers["X-Next-Token"] = cursorOf(page[page.length - 1]!);
    }
    const running = answered.map((a) => a.headers.get("x-total-running")).filter((v): v is string => v !== null);
    if (running.length > 0) headers["X-Total-Running"] = String(running.reduce((sum, v) => sum + Number(v), 0));
    sendRaw(res, 200, JSON.stringify(page), headers);
  } catch (err) {
    logger.error({ err, url: req.url }, "cluster sandbox list failed");
    if (!res.headersSent) sendJson(res, 500, JSON.stringify({ code: 500, message: "the cluster's sandbox list failed" }));
    else res.destroy();
  }
}

function compareListed(a: Listed, b: Listed): number {
  const ta = Date.parse(a.startedAt);
  const tb = Date.parse(b.startedAt);
  return ta - tb || (a.sandboxID < b.sandboxID ? -1 : a.sandboxID > b.sandboxID ? 1 : 0);
}

/** The list's cursor for a row, as api/sandboxes/list-filters.ts encodes it (base64url of `<startedAt ms>__<id>`). */
function cursorOf(row: Listed): string {
  return Buffer.from(`${Date.parse(row.startedAt)}__${row.sandboxID}`, "utf8").toString("base64url");
}

function sendRaw(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(body), ...headers });
  res.end(body);
}
