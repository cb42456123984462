// `burrow models list|add|remove` as a child process against the e2e server: providers added with a literal key or a
// secret's name show up in the list without the key, a provider added by the CLI serves calls through the gateway at
// the address `list` prints, bad flags are usage errors (exit 2), the server's refusals (unknown secret, duplicate)
// exit 1 with its message, and remove reports each name; `hosts` shows, sets and clears the provider host names.
import { randomBytes } from "node:crypto";
import { afterAll, describe, expect, test } from "vitest";
import { Secret } from "e2b";
import { runBurrow, type CliResult } from "../cli/run-burrow.js";
import { burrowEnv, hasBurrowEnv, sdkOpts } from "../conformance/env.js";
import { FakeProvider } from "./fake-provider.js";

const maybe = hasBurrowEnv ? describe : describe.skip;
const unique = (stem: string) => `${stem}-${randomBytes(3).toString("hex")}`;
const added: string[] = [];

function burrow(args: string[]): Promise<CliResult> {
  const env = burrowEnv();
  return runBurrow(args, { env: { ...process.env, E2B_API_URL: env.apiUrl, E2B_SANDBOX_URL: env.sandboxUrl, E2B_API_KEY: env.apiKey } });
}

maybe("burrow models", () => {
  afterAll(async () => {
    if (added.length > 0) await burrow(["models", "remove", ...added]);
  });

  test("add with a literal key or a secret, list without keys, call through the gateway, remove", async () => {
    const provider = await new FakeProvider("cli").start();
    const literal = unique("cli-lit");
    const fromSecret = unique("cli-sec");
    const model = unique("cli-model");
    const secretName = unique("cli-provider-key");
    const secret = await Secret.create(secretName, "sk-cli-from-secret", sdkOpts());
    try {
      const a = await burrow(["models", "add", literal, "--kind", "openai", "--base-url", provider.baseUrl("openai"), "--models", `${model}, other-model`, "--key", "sk-cli-literal-key", "--priority", "2", "--weight", "3"]);
      expect(a.code, a.stderr).toBe(0);
      expect(a.stdout).toBe(`${literal}\tadded\n`);
      added.push(literal);
      const b = await burrow(["models", "add", fromSecret, "--kind", "anthropic", "--base-url", provider.baseUrl("anthropic"), "--models", "claude-x", "--key-secret", secretName, "--json"]);
      expect(b.code, b.stderr).toBe(0);
      added.push(fromSecret);
      expect(JSON.parse(b.stdout)).toMatchObject({ name: fromSecret, kind: "anthropic", apiKey: { source: "secret", secret: secretName }, models: ["claude-x"], priority: 0, weight: 1 });

      const list = await burrow(["models", "list"]);
      expect(list.code, list.stderr).toBe(0);
      const lines = list.stdout.trimEnd().split("\n");
      const gatewayUrl = lines[0]!.split("\t")[1]!;
      expect(lines[0]).toMatch(/^gateway\thttp:\/\/127\.0\.0\.1:\d+$/);
      expect(lines[1]).toBe("sandboxes\thttp://models.burrow");
      expect(lines).toContain(`${literal}\topenai\t${provider.baseUrl("openai")}\tpriority=2\tweight=3\tkey=literal\tcircuit=closed\t${model},other-model`);
      expect(lines).toContain(`${fromSecret}\tanthropic\t${provider.baseUrl("anthropic")}\tpriority=0\tweight=1\tkey=secret:${secretName}\tcircuit=closed\tclaude-x`);
      const json = await burrow(["models", "list", "--json"]);
      expect(JSON.parse(json.stdout)).toMatchObject({ gateway: gatewayUrl, sandboxGateway: "http://models.burrow", providers: expect.arrayContaining([expect.objectContaining({ name: literal, apiKey: { source: "literal" } })]) });
      for (const out of [a, b, list, json]) expect(out.stdout + out.stderr).not.toMatch(/sk-cli-literal-key|sk-cli-from-secret/);

      // What the CLI configured serves: the gateway injects the literal key it was given.
      const res = await fetch(`${gatewayUrl}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${burrowEnv().apiKey}` },
        body: JSON.stringify({ model, messages: [] }),
      });
      expect(res.status).toBe(200);
      expect(provider.received.at(-1)!.headers.authorization).toBe("Bearer sk-cli-literal-key");

      const removed = await burrow(["models", "remove", literal, "no-such-provider", fromSecret]);
      expect(removed.code).toBe(1);
      expect(removed.stdout).toBe(`${literal}\tremoved\nno-such-provider\tnot found\n${fromSecret}\tremoved\n`);
      added.splice(0);
      const after = await burrow(["models", "list"]);
      expect(after.stdout).not.toContain(literal);
      expect(after.stdout).not.toContain(fromSecret);
    } finally {
      await Secret.destroy(secret.secretId, sdkOpts());
      await provider.close();
    }
  }, 120_000);

  test("bad flags are usage errors; the server's refusals exit 1 with its message; nothing is added", async () => {
    const name = unique("cli-bad");
    const base = ["models", "add", name, "--kind", "openai", "--base-url", "http://127.0.0.1:9/v1", "--models", "m"];
    for (const [extra, message] of [
      [["--priority", "first"], "--priority must be a non-negative integer, got 'first'"],
      [["--weight", "0"], "--weight must be a positive integer, got '0'"],
      [["--key", "k", "--key-secret", "s"], "give --key or --key-secret, not both"],
    ] as const) {
      const r = await burrow([...base, ...extra]);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(message);
    }
    const incomplete = await burrow(["models", "add", name, "--kind", "openai"]);
    expect(incomplete.code).toBe(2);
    expect(incomplete.stderr).toContain("needs --kind, --base-url and --models");

    const missingSecret = unique("cli-missing-secret");
    const refused = await burrow([...base, "--key-secret", missingSecret]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(missingSecret);
    const badKind = await burrow(["models", "add", name, "--kind", "gemini", "--base-url", "http://127.0.0.1:9/v1", "--models", "m"]);
    expect(badKind.code).toBe(1);
    expect(badKind.stderr).toMatch(/kind/);
    expect((await burrow(["models", "list"])).stdout).not.toContain(name);

    const ok = await burrow(base);
    expect(ok.code, ok.stderr).toBe(0);
    added.push(name);
    const duplicate = await burrow(base);
    expect(duplicate.code).toBe(1);
    expect(duplicate.stderr).toContain("already exists");
  }, 120_000);

  test("hosts sets, shows and clears the provider host names; a bad one exits 1 naming it", async () => {
    try {
      const set = await burrow(["models", "hosts", "api.openai.com", "api.anthropic.com"]);
      expect(set.code, set.stderr).toBe(0);
      expect(set.stdout).toBe("api.openai.com\napi.anthropic.com\n");
      const shown = await burrow(["models", "hosts", "--json"]);
      expect(JSON.parse(shown.stdout)).toEqual(["api.openai.com", "api.anthropic.com"]);
      const bad = await burrow(["models", "hosts", "*.openai.com"]);
      expect(bad.code).toBe(1);
      expect(bad.stderr).toContain("'*.openai.com'");
      expect((await burrow(["models", "hosts", "--clear", "x.test"])).code).toBe(2);
    } finally {
      const cleared = await burrow(["models", "hosts", "--clear"]);
      expect(cleared.code, cleared.stderr).toBe(0);
      expect(cleared.stdout).toBe("");
    }
  });
});
