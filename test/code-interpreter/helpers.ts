// Shared by the code-interpreter suites: connection options for the official @e2b/code-interpreter SDK against
// the global test server, and the one-time build of the template (minutes: apt inside a build sandbox) that the
// first suite of a run pays for and the others reuse.
import { Sandbox } from "@e2b/code-interpreter";
import type { BurrowTestEnv } from "../helpers/burrow-env.js";

export function connection(env: BurrowTestEnv) {
  return { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl };
}

function isConnectionDrop(error: unknown): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    if ((e as { code?: string }).code === "UND_ERR_SOCKET" || (e as { code?: string }).code === "ECONNRESET") return true;
  }
  return false;
}

/** Create a code-interpreter sandbox; the first create of a run waits for the template build. */
export async function createInterpreter(env: BurrowTestEnv, opts: { envs?: Record<string, string> } = {}): Promise<Sandbox> {
  // No request timeout on create: the first one builds the template. The server drops a connection that stays
  // silent past its idle timeout (5 minutes); a build slower than that (a busy machine) goes on regardless, and
  // asking again waits for the same build.
  for (let attempt = 1; ; attempt++) {
    try {
      return await Sandbox.create({ ...connection(env), ...opts, requestTimeoutMs: 0 });
    } catch (error) {
      if (attempt >= 3 || !isConnectionDrop(error)) throw error;
    }
  }
}

/** The sandbox's envd access token (the SDK keeps it protected). */
export function accessToken(sandbox: Sandbox): string | undefined {
  return (sandbox as unknown as { envdAccessToken?: string }).envdAccessToken;
}

/** Raw access to the execution server through the gateway, as the SDK addresses it; `null` sends no token. */
export function interpreterHeaders(sandbox: Sandbox, token: string | null = accessToken(sandbox) ?? null): Record<string, string> {
  return {
    "Content-Type": "application/json",
    "E2b-Sandbox-Id": sandbox.sandboxId,
    "E2b-Sandbox-Port": "49999",
    ...(token !== null ? { "X-Access-Token": token } : {}),
  };
}

/** Parse a streamed /execute body into its items. */
export function ndjson(text: string): Record<string, unknown>[] {
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
