// E2B endpoints Burrow does not implement yet. They answer 501 in E2B's error shape rather than a bare 404, so
// SDK users get a clear "not supported" instead of a confusing "not found". Sandbox-scoped ones still answer
// 404 for unknown sandboxes, as the SDK maps that to SandboxNotFoundError.
import type { FastifyInstance, HTTPMethods } from "fastify";
import { BurrowError, Code } from "@burrow/protocol";
import type { ApiContext } from "../context.js";
import { errorResponses } from "../schemas.js";

const SANDBOX_SCOPED: ReadonlyArray<[HTTPMethods, string, string]> = [
  ["POST", "/sandboxes/:sandboxID/refreshes", "sandbox refreshes"],
];

const GLOBAL: ReadonlyArray<[HTTPMethods, string, string]> = [
];

/** Answered by templates-api/ when the server has a template builder; 501 otherwise. */
const TEMPLATE_BUILDS: ReadonlyArray<[HTTPMethods, string, string]> = [
  ["POST", "/v3/templates", "template builds"],
  ["POST", "/v2/templates/:templateID/builds/:buildID", "template builds"],
  ["GET", "/templates/:templateID/builds/:buildID/status", "template builds"],
  ["GET", "/templates/:templateID/files/:hash", "template builds"],
  ["DELETE", "/templates/:templateID", "deleting templates and snapshots"],
  ["POST", "/templates/tags", "template tags"],
  ["DELETE", "/templates/tags", "template tags"],
  ["GET", "/templates/:templateID/tags", "template tags"],
];

const notSupported = (what: string) => new BurrowError(Code.Unimplemented, `${what} is not supported by Burrow yet`);

export function registerUnsupportedRoutes(app: FastifyInstance, ctx: ApiContext): void {
  for (const [method, url, what] of SANDBOX_SCOPED) {
    app.route<{ Params: { sandboxID: string } }>({
      method,
      url,
      schema: { summary: `Not implemented: ${what}`, response: errorResponses(401, 404, 501) },
      handler: async (request) => {
        ctx.sandboxes.require(request.params.sandboxID);
        throw notSupported(what);
      },
    });
  }
  registerNotSupported(app, GLOBAL);
}

export function registerUnsupportedTemplateRoutes(app: FastifyInstance): void {
  registerNotSupported(app, TEMPLATE_BUILDS);
}

function registerNotSupported(app: FastifyInstance, routes: ReadonlyArray<[HTTPMethods, string, string]>): void {
  for (const [method, url, what] of routes) {
    app.route({
      method,
      url,
      schema: { summary: `Not implemented: ${what}`, response: errorResponses(401, 501) },
      handler: async () => {
        throw notSupported(what);
      },
    });
  }
}
