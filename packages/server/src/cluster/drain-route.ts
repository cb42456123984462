// POST /burrow/v1/nodes/{name}/drain (instance admin): drain a node (drain.ts). Any node takes the request; a
// drain of another node is sent on to it (pauses happen where the sandboxes are) and its report comes back. The
// answer waits for the drain: up to `timeout` seconds. POST /burrow/v1/nodes/{name}/sandboxes/{id}/take is how a
// draining node with `move` hands a sandbox to another (sandbox-moves.ts), with the operator's credentials.
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import { BurrowError, Code } from "@burrow/protocol";
import { drainNode, type DrainableSandboxes, type HandOver } from "./drain.js";
import { isForwarded } from "./forwarded-header.js";
import type { Membership } from "./membership.js";
import { postToNode } from "./node-post.js";
import type { SandboxMoves } from "./sandbox-moves.js";

interface DrainBody {
  timeout?: number;
  pause?: boolean;
  move?: boolean;
}

/** What the take-over route needs of the sandbox service beside what a drain does. */
interface MovedSandboxes {
  get(sandboxId: string): { timeoutSec?: number | null } | undefined;
  connect(sandboxId: string, timeoutSec: number | undefined): Promise<unknown>;
}

/** Seconds a drain waits for the node's sandboxes to stop running, unless the request says. */
export const DEFAULT_DRAIN_TIMEOUT_SEC = 300;

const drainBody = {
  type: "object",
  additionalProperties: false,
  properties: {
    timeout: { type: "integer", minimum: 0, maximum: 86_400, description: `seconds to wait for no sandbox running (default ${DEFAULT_DRAIN_TIMEOUT_SEC})` },
    pause: { type: "boolean", description: "pause the running sandboxes to the filesystem (memory: false) first" },
    move: { type: "boolean", description: "move the running sandboxes to other nodes (paused to the filesystem, resumed there)" },
  },
} as const;

function requireInstanceAdmin(request: FastifyRequest): void {
  if (!request.caller?.instanceAdmin) throw new BurrowError(Code.PermissionDenied, "the cluster's nodes are the operator's; this needs the instance admin key");
}

export function registerDrainRoute(app: FastifyInstance, membership: Membership, sandboxes: DrainableSandboxes & MovedSandboxes, logger: Logger, moves?: SandboxMoves): void {
  app.post<{ Params: { name: string }; Body: DrainBody | undefined }>(
    "/burrow/v1/nodes/:name/drain",
    { schema: { summary: "Drain a node: cordon it, optionally pause its sandboxes to disk, wait until none runs (instance admin)", body: drainBody } },
    async (request, reply) => {
      requireInstanceAdmin(request);
      const { name } = request.params;
      const timeoutMs = (request.body?.timeout ?? DEFAULT_DRAIN_TIMEOUT_SEC) * 1000;
      const signal = clientGone(request);
      if (name === membership.nodeName) {
        let move: HandOver | undefined;
        if (request.body?.move) {
          if (!moves) throw new BurrowError(Code.FailedPrecondition, `node ${name} cannot move sandboxes (its templates are not shared)`, { reason: "moves_unavailable" });
          const credentials = operatorHeaders(request);
          move = (sandboxId, moveSignal) => moves.handOver(sandboxId, credentials, moveSignal);
        }
        return drainNode(membership, sandboxes, { pause: request.body?.pause ?? false, move, timeoutMs, signal }, logger);
      }
      const view = membership.node(name);
      if (!view) throw new BurrowError(Code.NotFound, `node "${name}" is not in the cluster`, { reason: "node_not_found" });
      if (isForwarded(request.headers)) throw new BurrowError(Code.FailedPrecondition, `this is node ${membership.nodeName}, not ${name}`, { reason: "wrong_node" });
      if (view.status !== "up") throw new BurrowError(Code.Unavailable, `node ${name} is down: it cannot pause its sandboxes`, { reason: "node_down" });
      const headers: Record<string, string> = { "content-type": "application/json", ...membership.signing.headers("POST", request.url, name), ...operatorHeaders(request) };
      const answer = await postToNode(`${view.apiUrl}${request.url}`, headers, JSON.stringify(request.body ?? {}), signal).catch((cause: unknown) => {
        throw new BurrowError(Code.Unavailable, `node ${name} could not be reached`, { cause, reason: "node_unreachable" });
      });
      return reply.code(answer.status).type("application/json").send(answer.body);
    },
  );

  // A node taking over a sandbox a drain hands it (sandbox-moves.ts): it makes it its own and resumes it.
  app.post<{ Params: { name: string; sandboxId: string } }>(
    "/burrow/v1/nodes/:name/sandboxes/:sandboxId/take",
    { schema: { summary: "Take over a filesystem-paused sandbox of a draining node and resume it here (instance admin; sent by a drain)" } },
    async (request) => {
      requireInstanceAdmin(request);
      const { name, sandboxId } = request.params;
      if (name !== membership.nodeName) throw new BurrowError(Code.FailedPrecondition, `this is node ${membership.nodeName}, not ${name}`, { reason: "wrong_node" });
      if (!moves) throw new BurrowError(Code.FailedPrecondition, `node ${name} cannot take sandboxes over (its templates are not shared)`, { reason: "moves_unavailable" });
      const signal = clientGone(request);
      await moves.take(sandboxId, "operator", signal);
      // Resumed with the lifetime its create asked for, as a connect would start it again.
      await sandboxes.connect(sandboxId, sandboxes.get(sandboxId)?.timeoutSec ?? undefined);
      return { sandboxId, node: membership.nodeName };
    },
  );
}

/** The operator's credentials, passed on to the node that acts. */
function operatorHeaders(request: FastifyRequest): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const header of ["x-api-key", "authorization"]) {
    const value = request.headers[header];
    if (typeof value === "string") headers[header] = value;
  }
  return headers;
}


function clientGone(request: FastifyRequest): AbortSignal {
  const controller = new AbortController();
  request.raw.socket.once("close", () => controller.abort());
  return controller.signal;
}
