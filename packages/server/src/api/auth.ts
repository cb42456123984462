// API-key authentication for every REST route except those marked `config.public`. A key authenticates as a
// Caller (its team and role, teams/caller.ts); revoked keys are refused, and open requests are tracked per key so
// that a revocation ends them (teams/key-streams.ts).
import type { FastifyInstance, FastifyRequest } from "fastify";
import { BurrowError, Code } from "@burrow/protocol";
import { apiKeyFromHeaders } from "../auth/credentials.js";
import { callerOf, type Caller } from "../teams/caller.js";
import type { ApiContext } from "./context.js";

declare module "fastify" {
  interface FastifyRequest {
    /** Id of the API key that authenticated the request; null on public routes. */
    apiKeyId: number | null;
    /** The key's team and role; null on public routes. */
    caller: Caller | null;
  }
  interface FastifyContextConfig {
    /** Route needs no API key. */
    public?: boolean;
  }
}

export function registerAuth(app: FastifyInstance, ctx: ApiContext): void {
  app.decorateRequest("apiKeyId", null);
  app.decorateRequest("caller", null);
  app.addHook("onRequest", async (request: FastifyRequest, reply) => {
    // Unknown routes answer 404 whoever asks; it reveals nothing a route list would not.
    if (request.is404 || request.routeOptions.config.public) return;
    const key = apiKeyFromHeaders(request.headers);
    if (!key) throw new BurrowError(Code.Unauthenticated, "missing API key: send it in the X-API-KEY header");
    const info = ctx.teams.store.verify(key);
    if (!info) throw new BurrowError(Code.Unauthenticated, "invalid API key");
    ctx.teams.store.touch(info);
    request.apiKeyId = info.id;
    request.caller = callerOf(info, key, ctx.teams.store.teamAnchorKey(info.id));
    ctx.teams.streams.track(info.id, request.raw, reply.raw);
  });
}
