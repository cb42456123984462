import type { HandlerContext } from "@connectrpc/connect";
import type { EnvdContext } from "../context.js";
import { connectErrorFrom } from "../errors.js";
import { resolveRequestUser, userFromBasicAuth } from "../users/request-user.js";
import type { SandboxUser } from "../users/user-db.js";

/** The user an RPC runs as: `Authorization: Basic base64("<user>:")`, else the default user. */
export function rpcUser(env: EnvdContext, ctx: HandlerContext): SandboxUser {
  try {
    return resolveRequestUser(env.users, env.state, userFromBasicAuth(ctx.requestHeader.get("authorization")));
  } catch (err) {
    // An unknown user is Unauthenticated, as E2B answers it.
    throw connectErrorFrom(err);
  }
}
