// GET /templates/aliases/:alias — `Template.exists()`: 200 when the alias resolves, 404 otherwise.
import type { FastifyInstance } from "fastify";
import { BurrowError, Code } from "@burrow/protocol";
import type { ApiContext } from "../context.js";
import { errorResponses } from "../schemas.js";

export function registerTemplateAliasRoute(app: FastifyInstance, ctx: ApiContext): void {
  app.get<{ Params: { alias: string } }>(
    "/templates/aliases/:alias",
    {
      schema: {
        summary: "Resolve a template alias",
        params: { type: "object", required: ["alias"], properties: { alias: { type: "string" } } },
        response: {
          200: {
            type: "object",
            required: ["templateID", "public"],
            properties: { templateID: { type: "string" }, public: { type: "boolean" } },
          },
          ...errorResponses(401, 404),
        },
      },
    },
    async (request) => {
      const info = ctx.orchestrator.resolveTemplate(request.params.alias);
      if (!info) throw new BurrowError(Code.NotFound, `template alias '${request.params.alias}' not found`);
      // Every template on a Burrow node belongs to its operator: nothing is public.
      return { templateID: info.templateId, public: false };
    },
  );
}
