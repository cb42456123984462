// Queues and agents per team: a team key's queue names and agent ids live under its team. The bus keys queues and
// agents by one global name, so a team's are stored as `t<8 hex of the team id>-<name>` and shown without the prefix
// to the team's keys; the default team (the instance admin's, and every queue and agent from before teams) keeps
// bare names. A name in another team's namespace is 404 like a queue or agent that does not exist, and the agent
// and queue lists show a team its own only.
import type { FastifyInstance, FastifyRequest } from "fastify";
import { BurrowError, Code } from "@burrow/protocol";
import type { Caller } from "./caller.js";

const BURROW = "/burrow/v1";
/** A team namespace's prefix: reserved, whoever asks. */
const NAMESPACE = /^t[0-9a-f]{8}-/;
/** The bus's longest queue name (work-queue.ts). */
const MAX_QUEUE_NAME = 57;

/** The prefix of a team's queue names and agent ids; empty for the default team. */
export function busNamespace(teamId: string, defaultTeamId: string): string {
  return teamId === defaultTeamId ? "" : `t${teamId.replace(/-/g, "").slice(0, 8).toLowerCase()}-`;
}

/** The stored name of a queue name or agent id a caller gives, or 404 when it is in another team's namespace. */
export function storedBusName(kind: "queue" | "agent", name: string, namespace: string): string {
  if (NAMESPACE.test(name)) {
    if (namespace !== "" && name.startsWith(namespace)) return name;
    throw new BurrowError(Code.NotFound, kind === "queue" ? `queue "${name}" not found` : `agent ${name} not found`);
  }
  const stored = namespace + name;
  if (kind === "queue" && stored.length > MAX_QUEUE_NAME) {
    throw new BurrowError(Code.InvalidArgument, `queue name "${name}" is too long: a team's queue names have at most ${MAX_QUEUE_NAME - namespace.length} characters`);
  }
  return stored;
}

type Item = Record<string, unknown>;

export function registerBusNames(app: FastifyInstance, d: { defaultTeamId: string }): void {
  const namespaceOf = (c: Caller) => busNamespace(c.teamId, d.defaultTeamId);
  // After validation: the names are checked as the caller wrote them, then moved into its namespace.
  app.addHook("preHandler", async (request) => {
    const caller = request.caller;
    if (!caller) return;
    rewrite(request, namespaceOf(caller));
  });
  app.addHook("onSend", async (request, reply, payload) => {
    const caller = request.caller;
    const url = request.routeOptions.url ?? "";
    if (!caller || typeof payload !== "string") return payload;
    const queueList = url === `${BURROW}/queues` || url === `${BURROW}/queues/:name`;
    if (!url.startsWith(`${BURROW}/agents`) && !(queueList && request.method === "GET")) return payload;
    const namespace = namespaceOf(caller);
    let out = payload;
    if (url === `${BURROW}/queues` && reply.statusCode === 200) {
      try {
        const items = JSON.parse(payload) as unknown;
        if (Array.isArray(items)) out = JSON.stringify(items.filter((i: Item) => ownsAgent(String(i["name"] ?? ""), namespace)).map((i: Item) => strip(i, namespace, "name")));
      } catch {
        return payload;
      }
    } else if (url === `${BURROW}/agents` && request.method === "GET" && reply.statusCode === 200) {
      try {
        const items = JSON.parse(payload) as unknown;
        if (Array.isArray(items)) out = JSON.stringify(items.filter((i: Item) => ownsAgent(String(i["agentId"] ?? ""), namespace)).map((i: Item) => strip(i, namespace)));
      } catch {
        return payload;
      }
    } else if (namespace !== "") {
      out = payload.split(`"${namespace}`).join('"');
    }
    if (out !== payload && reply.hasHeader("content-length")) reply.header("content-length", Buffer.byteLength(out));
    return out;
  });
}

/** Whether a stored agent id or queue name is in this namespace (the default team's: no team's prefix). */
function ownsAgent(agentId: string, namespace: string): boolean {
  return namespace === "" ? !NAMESPACE.test(agentId) : agentId.startsWith(namespace);
}

function strip(item: Item, namespace: string, field = "agentId"): Item {
  const id = item[field];
  return namespace !== "" && typeof id === "string" && id.startsWith(namespace) ? { ...item, [field]: id.slice(namespace.length) } : item;
}

function rewrite(request: FastifyRequest, namespace: string): void {
  const url = request.routeOptions.url ?? "";
  const params = (request.params ?? {}) as Record<string, unknown>;
  if (url.startsWith(`${BURROW}/queues/`) && typeof params["name"] === "string") params["name"] = storedBusName("queue", params["name"], namespace);
  if (url.startsWith(`${BURROW}/agents/`) && typeof params["agentId"] === "string") params["agentId"] = storedBusName("agent", params["agentId"], namespace);
}
