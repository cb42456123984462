// The secret service on a real store in a temporary state directory: placeholder resolution for egress, owner
// isolation, and the cipher's refusal of a value moved between rows or read under another key.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { BurrowError, Code } from "@burrow/protocol";
import Database from "better-sqlite3";
import { openStore, type Store } from "../src/store/store.js";
import { openSecrets } from "../src/secrets/index.js";
import type { SecretService } from "../src/secrets/index.js";

let dir: string;
let store: Store;
let secrets: SecretService;
let alice: { apiKeyId: number };
let bob: { apiKeyId: number };

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "burrow-secrets-"));
  store = openStore(dir);
  secrets = openSecrets(dir, store.secrets);
  alice = { apiKeyId: store.apiKeys.add("key-alice").id };
  bob = { apiKeyId: store.apiKeys.add("key-bob").id };
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("SecretService", () => {
  test("resolveSecretPlaceholders replaces every placeholder with the owner's current value, names in any case", () => {
    secrets.create(alice, { name: "OpenAI", value: "sk-one" });
    secrets.create(alice, { name: "org", value: "org-7" });
    expect(secrets.resolveSecretPlaceholders("Bearer ${e2b.secrets.openai}; org=${e2b.secrets.ORG}", alice)).toBe("Bearer sk-one; org=org-7");
    secrets.update(alice, "openai", { value: "sk-two" });
    expect(secrets.resolveSecretPlaceholders("${e2b.secrets.OpenAI}", alice)).toBe("sk-two");
    expect(secrets.resolveSecretPlaceholders("no placeholders, ${e2b.other.x}", alice)).toBe("no placeholders, ${e2b.other.x}");
  });

  test("an unknown or another owner's name fails with NotFound naming it", () => {
    secrets.create(alice, { name: "mine", value: "v" });
    const err = (() => {
      try {
        secrets.resolveSecretPlaceholders("${e2b.secrets.mine}", bob);
        return undefined;
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(BurrowError);
    expect((err as BurrowError).code).toBe(Code.NotFound);
    expect((err as BurrowError).message).toContain("mine");
    // The same name is free for another owner, and lists are per owner.
    secrets.create(bob, { name: "mine", value: "w" });
    expect(secrets.resolveSecretPlaceholders("${e2b.secrets.mine}", bob)).toBe("w");
    expect(secrets.list(alice).secrets.map((s) => s.name)).toEqual(["mine"]);
    expect(() => secrets.get(bob, secrets.list(alice).secrets[0]!.secretId)).toThrow(/not found/);
  });

  test("a sealed value copied onto another row, or read under another key, does not decrypt", () => {
    const a = secrets.create(alice, { name: "a", value: "value-a" });
    secrets.create(alice, { name: "b", value: "value-b" });
    const db = new Database(join(dir, "burrow.db"));
    db.prepare("UPDATE secrets SET sealed_value = (SELECT sealed_value FROM secrets WHERE secret_id = ?) WHERE name = 'b'").run(a.secretId);
    db.close();
    expect(() => secrets.value(alice, "b")).toThrow(/cannot be decrypted/);
    writeFileSync(join(dir, "secrets.key"), `${Buffer.alloc(32, 7).toString("base64")}\n`);
    const otherKey = openSecrets(dir, store.secrets);
    expect(() => otherKey.value(alice, "a")).toThrow(/cannot be decrypted/);
    expect(secrets.value(alice, "a")).toBe("value-a");
  });
});
