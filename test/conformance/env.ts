// Connection settings for the official-SDK conformance suite. The global setup (test/setup/global-server.ts)
// starts a real Burrow server with the real orchestrator and provides them under the key "burrow".
import type { BurrowTestEnv } from "../helpers/burrow-env.js";
import { inject, test } from "vitest";
import { Sandbox } from "e2b";

export type { BurrowTestEnv };

export function burrowEnv(): BurrowTestEnv {
  return inject("burrow");
}

/** Options for every SDK call: explicit, so that a stray E2B_* variable in the environment cannot redirect tests. */
export function sdkOpts(): { apiKey: string; apiUrl: string; sandboxUrl: string; debug: false } {
  const env = burrowEnv();
  return { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl, debug: false };
}

/** The template the SDK's own tests use. */
export const TEMPLATE = "base";

/** Whether a global setup provided a server; without one (a plain `vitest run`) the suite is skipped. */
export const hasBurrowEnv = (inject("burrow") as BurrowTestEnv | undefined) !== undefined;

/** Creates further sandboxes (of `base` unless a template is named) for one test; all are killed when it ends. */
export type Spawn = (opts?: Parameters<typeof Sandbox.create>[1], template?: string) => Promise<Sandbox>;

/**
 * A test with a fresh `base` sandbox that is killed afterwards, like the SDK suite's `sandboxTest`, and `spawn`
 * for tests that need more (or differently created) sandboxes. Fixtures are lazy: unused ones create nothing.
 */
const withSandbox = test.extend<{ sandbox: Sandbox; spawn: Spawn }>({
  // eslint-disable-next-line no-empty-pattern
  sandbox: async ({}, use) => {
    const sandbox = await Sandbox.create(TEMPLATE, { ...sdkOpts(), timeoutMs: 120_000 });
    try {
      await use(sandbox);
    } finally {
      await sandbox.kill().catch(() => undefined);
    }
  },
  // eslint-disable-next-line no-empty-pattern
  spawn: async ({}, use) => {
    const created: Sandbox[] = [];
    try {
      await use(async (opts, template = TEMPLATE) => {
        const sandbox = await Sandbox.create(template, { timeoutMs: 120_000, ...opts, ...sdkOpts() });
        created.push(sandbox);
        return sandbox;
      });
    } finally {
      await Promise.all(created.map((s) => s.kill().catch(() => undefined)));
    }
  },
});

export const sandboxTest = hasBurrowEnv ? withSandbox : withSandbox.skip;
