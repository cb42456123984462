// POST /burrow/v1/nodes/{name}/drain (instance admin): drain a node (drain.ts). Any node takes the request; a
// drain of another node is sent on to it (pauses happen where the sandboxes are) and its report comes back. The
// answer waits for the drain: up to `timeout` seconds.
import { request as httpRequest } from "node:http";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import { BurrowError, Code } from "@burrow/protocol";
import { drainNode, type DrainableSandboxes } from "./drain.js";
import { isForwarded } from "./forwarded-header.js";
import type { Membership } from "./membership.js";

interface DrainBody {
  timeout?: number;
  pause?: boolean;
}

/** Seconds a drain waits for the node's sandboxes to stop running, unless the request says. */
export const DEFAULT_DRAIN_TIMEOUT_SEC = 300;

const drainBody = {
  type: "object",
  additionalProperties: false,
  properties: {
    timeout: { type: "integer", minimum: 0, maximum: 86_400, description: `seconds to wait for no sandbox running (default ${DEFAULT_DRAIN_TIMEOUT_SEC})` },
    pause: { type: "boolean", description: "pause the running sandboxes to the filesystem (memory: false) first" },
  },
} as const;

function requireInstanceAdmin(request: FastifyRequest): void {
  if (!request.caller?.instanceAdmin) throw new BurrowError(Code.PermissionDenied, "the cluster's nodes are the operator's; this needs the instance admin key");
}

export function registerDrainRoute(app: FastifyInstance, membership: Membership, sandboxes: DrainableSandboxes, logger: Logger): void {
  app.post<{ Params: { name: string }; Body: DrainBody | undefined }>(
    "/burrow/v1/nodes/:name/drain",
    { schema: { summary: "Drain a node: cordon it, optionally pause its sandboxes to disk, wait until none runs (instance admin)", body: drainBody } },
    async (request, reply) => {
      requireInstanceAdmin(request);
      const { name } = request.params;
      const timeoutMs = (request.body?.timeout ?? DEFAULT_DRAIN_TIMEOUT_SEC) * 1000;
      const signal = clientGone(request);
      if (name === membership.nodeName) return drainNode(membership, sandboxes, { pause: request.body?.pause ?? false, timeoutMs, signal }, logger);
      const view = membership.node(name);
      if (!view) throw new BurrowError(Code.NotFound, `node "${name}" is not in the cluster`, { reason: "node_not_found" });
      if (isForwarded(request.headers)) throw new BurrowError(Code.FailedPrecondition, `this is node ${membership.nodeName}, not ${name}`, { reason: "wrong_node" });
      if (view.status !== "up") throw new BurrowError(Code.Unavailable, `node ${name} is down: it cannot pause its sandboxes`, { reason: "node_down" });
      const headers: Record<string, string> = { "content-type": "application/json", ...membership.signing.headers("POST", request.url, name) };
      for (const header of ["x-api-key", "authorization"]) {
        const value = request.headers[header];
        if (typeof value === "string") headers[header] = value;
      }
      const answer = await postJson(`${view.apiUrl}${request.url}`, headers, JSON.stringify(request.body ?? {}), signal).catch((cause: unknown) => {
        throw new BurrowError(Code.Unavailable, `node ${name} could not be reached`, { cause, reason: "node_unreachable" });
      });
      return reply.code(answer.status).type("application/json").send(answer.body);
    },
  );
}

/** node:http, not fetch: fetch gives up on answers that take more than 5 minutes to start, and a drain may. */
function postJson(url: string, headers: Record<string, string>, body: string, signal: AbortSignal): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: "POST", headers: { ...headers, "content-length": String(Buffer.byteLength(body)) }, signal }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 502, body: text }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

function clientGone(request: FastifyRequest): AbortSignal {
  const controller = new AbortController();
  request.raw.socket.once("close", () => controller.abort());
  return controller.signal;
}
