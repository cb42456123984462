import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import type { EnvdContext } from "../context.js";
import { resolveRequestUser, UnknownUserError, userFromBasicAuth } from "../users/request-user.js";
import type { SandboxUser } from "../users/user-db.js";

/** The user an RPC runs as: `Authorization: Basic base64("<user>:")`, else the default user. */
export function rpcUser(env: EnvdContext, ctx: HandlerContext): SandboxUser {
  try {
    return resolveRequestUser(env.users, env.state, userFromBasicAuth(ctx.requestHeader.get("authorization")));
  } catch (err) {
    if (err instanceof UnknownUserError) throw new ConnectError(err.message, Code.Unauthenticated);
    throw err;
  }
}
