// Who may use the execution server: the holder of the sandbox's access token (the X-Access-Token envd checks).
// /execute always needs it when the sandbox has one. The official JS SDK (2.8.0) sends no token on its context
// calls (create, list, restart, remove), so those are let through without one; a wrong token is refused on every
// endpoint.
import type { IncomingMessage } from "node:http";
import { BurrowError, Code } from "@burrow/protocol/errors";
import type { EnvdClient } from "../envd/envd-client.js";

export const UNAUTHORIZED_MESSAGE = "unauthorized access, please provide a valid access token";

export interface Access {
  /** The sandbox's environment variables as envd has them (empty when not fetched). */
  sandboxEnv: Record<string, string>;
}

export class AccessGuard {
  constructor(private readonly envd: EnvdClient | undefined) {}

  async check(req: IncomingMessage, opts: { tokenRequired: boolean }): Promise<Access> {
    const header = req.headers["x-access-token"];
    const token = Array.isArray(header) ? header[0] : header;
    if (!this.envd) return { sandboxEnv: {} };
    const answer = await this.envd.envs(token);
    if (answer.kind === "ok") return { sandboxEnv: answer.envs };
    if (token !== undefined || opts.tokenRequired) throw new BurrowError(Code.Unauthenticated, UNAUTHORIZED_MESSAGE);
    return { sandboxEnv: {} };
  }
}
