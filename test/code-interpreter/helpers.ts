// Shared by the code-interpreter suites: connection options for the official @e2b/code-interpreter SDK against
// the global test server, and the one-time build of the template (minutes: apt inside a build sandbox) that the
// first suite of a run pays for and the others reuse.
import { Sandbox } from "@e2b/code-interpreter";
import { afterAll, beforeAll, inject } from "vitest";
import type { BurrowTestEnv } from "../helpers/burrow-env.js";

export function connection(env: BurrowTestEnv) {
  return { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl };
}

/** undici gives up on a response head after 5 minutes whatever the SDK's timeout says. */
function isClientHeadTimeout(error: unknown): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    if ((e as { code?: string }).code === "UND_ERR_HEADERS_TIMEOUT") return true;
  }
  return false;
}

/**
 * Create a code-interpreter sandbox. The first create of a run waits for the template's build (apt in a build
 * sandbox: minutes, more than undici's 5-minute head timeout on a loaded machine); the build goes on when the
 * client gives up, so asking again waits for the same build.
 */
export async function createInterpreter(env: BurrowTestEnv, opts: { envs?: Record<string, string> } = {}): Promise<Sandbox> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await Sandbox.create({ ...connection(env), ...opts, requestTimeoutMs: 0 });
    } catch (error) {
      if (attempt >= 4 || !isClientHeadTimeout(error)) throw error;
    }
  }
}

/** One code-interpreter sandbox for a whole file: created before its tests, killed after them. */
export function useInterpreter(opts: { envs?: Record<string, string> } = {}): { readonly sandbox: Sandbox; readonly env: BurrowTestEnv } {
  const env = inject("burrow");
  let sandbox: Sandbox | undefined;
  beforeAll(async () => {
    sandbox = await createInterpreter(env, opts);
  }, 1_800_000);
  afterAll(async () => {
    await sandbox?.kill();
  });
  return {
    env,
    get sandbox(): Sandbox {
      if (!sandbox) throw new Error("the code-interpreter sandbox was not created (see beforeAll's error)");
      return sandbox;
    },
  };
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
