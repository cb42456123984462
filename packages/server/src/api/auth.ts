// API-key authentication for every REST route except those marked `config.public`.
import type { FastifyInstance, FastifyRequest } from "fastify";
import { BurrowError, Code } from "@burrow/protocol";
import { apiKeyFromHeaders } from "../auth/credentials.js";
import type { ApiContext } from "./context.js";

declare module "fastify" {
  interface FastifyRequest {
    /** Id of the API key that authenticated the request; null on public routes. */
    apiKeyId: number | null;
  }
  interface FastifyContextConfig {
    /** Route needs no API key. */
    public?: boolean;
  }
}

export function registerAuth(app: FastifyInstance, ctx: ApiContext): void {
  app.decorateRequest("apiKeyId", null);
  app.addHook("onRequest", async (request: FastifyRequest) => {
    // Unknown routes answer 404 whoever asks; it reveals nothing a route list would not.
    if (request.is404 || request.routeOptions.config.public) return;
    const key = apiKeyFromHeaders(request.headers);
    if (!key) throw new BurrowError(Code.Unauthenticated, "missing API key: send it in the X-API-KEY header");
    const info = ctx.apiKeys.verify(key);
    if (!info) throw new BurrowError(Code.Unauthenticated, "invalid API key");
    request.apiKeyId = info.id;
  });
}
