// E2B's workload identity tokens (create's `iam.tokens`, `${e2b.identity.tokens.NAME}` in header transforms) against
// the shared test server, with the official SDK's own way of writing them (a transform callback reading
// `iam.tokens`): what such a token is E2B does not specify, so Burrow answers 400 saying so (and pointing to
// secrets) instead of creating a sandbox whose requests would fail at the destination. Nothing is created.
import { Sandbox } from "e2b";
import { describe, expect, it } from "vitest";
import { burrowEnv, sdkOpts } from "../conformance/env.js";

async function create(body: unknown): Promise<{ status: number; json: any }> {
  const env = burrowEnv();
  const res = await fetch(`${env.apiUrl}/sandboxes`, {
    method: "POST",
    headers: { "x-api-key": env.apiKey, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

describe("workload identity tokens", () => {
  it("the SDK's iam tokens and their placeholder are a 400 that says why, and no sandbox is made", async () => {
    const before = (await Sandbox.list(sdkOpts()).nextItems()).length;
    const attempt = Sandbox.create("base", {
      ...sdkOpts(),
      iam: { tokens: { aws: { audience: "sts.amazonaws.com", tokenType: "jwt" } } },
      network: { rules: { "api.test": [{ transform: ({ iam }: { iam: { tokens: Record<string, string> } }) => ({ headers: { Authorization: `Bearer ${iam.tokens["aws"]}` } }) }] } },
    } as never);
    await expect(attempt).rejects.toThrow(/iam\.tokens 'aws': workload identity tokens .* not supported by Burrow.*e2b\.secrets/);
    expect((await Sandbox.list(sdkOpts()).nextItems()).length).toBe(before);

    // The placeholder alone (written by hand) is named too.
    const r = await create({ templateID: "base", network: { rules: { "api.test": [{ transform: { headers: { "X-Token": "${e2b.identity.tokens.gcp}" } } }] } } });
    expect(r).toMatchObject({ status: 400, json: { code: 400, message: expect.stringMatching(/\$\{e2b\.identity\.tokens\.gcp\}.*not supported by Burrow/) } });
    // An empty iam is nothing asked for.
    const empty = await create({ templateID: "base", iam: { tokens: {} }, network: { rules: { "api.test": [{ transform: { headers: { "X-Token": "${e2b.identity.tokens.gcp}" } } }] } } });
    expect(empty.status).toBe(400);
    expect(empty.json.message).not.toMatch(/^iam\.tokens/);
  });
});
