// GET /burrow/v1/nodes and POST /burrow/v1/nodes/{name}/cordon|uncordon: the cluster's nodes as the nodes bucket
// holds them, for the operator (instance admin key) only.
import type { FastifyInstance, FastifyRequest } from "fastify";
import { BurrowError, Code, type NodeListWire } from "@burrow/protocol";
import type { Membership } from "./membership.js";

function requireInstanceAdmin(request: FastifyRequest): void {
  if (!request.caller?.instanceAdmin) throw new BurrowError(Code.PermissionDenied, "the cluster's nodes are the operator's; this needs the instance admin key");
}

export function registerClusterRoutes(app: FastifyInstance, membership: Membership): void {
  app.get("/burrow/v1/nodes", { schema: { summary: "The cluster's nodes: record, load, up or down (instance admin)" } }, async (request): Promise<NodeListWire> => {
    requireInstanceAdmin(request);
    return { self: membership.nodeName, nodes: membership.list() };
  });
  for (const [verb, cordoned] of [["cordon", true], ["uncordon", false]] as const) {
    app.post<{ Params: { name: string } }>(
      `/burrow/v1/nodes/:name/${verb}`,
      { schema: { summary: cordoned ? "Cordon a node: it takes no new sandboxes (instance admin)" : "Uncordon a node (instance admin)" } },
      async (request) => {
        requireInstanceAdmin(request);
        return membership.setCordoned(request.params.name, cordoned);
      },
    );
  }
}
