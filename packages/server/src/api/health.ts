// GET /health (API liveness, no auth) and GET /metrics (Prometheus text format, no auth: scrapers rarely carry
// keys, and the default bind address is loopback).
import type { FastifyInstance } from "fastify";
import type { ApiContext } from "./context.js";

export function registerHealthRoutes(app: FastifyInstance, ctx: ApiContext): void {
  app.get(
    "/health",
    {
      config: { public: true },
      schema: {
        summary: "API liveness",
        response: { 200: { type: "object", properties: { status: { type: "string" } } } },
      },
    },
    async () => ({ status: "ok" }),
  );

  app.get("/metrics", { config: { public: true }, schema: { summary: "Prometheus metrics", hide: true } }, async (_request, reply) => {
    const body = await ctx.registry.metrics();
    return reply.type(ctx.registry.contentType).send(body);
  });
}
