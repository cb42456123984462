// Bootstrap credentials: a fresh install must be usable without a setup step, yet the key must not be
// readable by other local users.
import { randomBytes } from "node:crypto";
import { existsSync, writeFileSync, chmodSync } from "node:fs";
import { join } from "node:path";
import type { ApiKeyStore } from "../store/api-keys.js";

export const API_KEY_FILE = "api-key";

/**
 * `e2b_` + 40 hex: SDKs 2.33–2.45 reject keys that are not `e2b_<hex>`.
 */
export function generateApiKey(): string {
  return `e2b_${randomBytes(20).toString("hex")}`;
}

export interface EnsureApiKeyResult {
  /** The plaintext key when this call created or registered one, else null (it was created earlier). */
  created: string | null;
  /** Where the generated key was written; null when the key came from configuration. */
  keyFile: string | null;
}

/**
 * Make sure at least one key can call the API.
 * - With `configuredKey` (BURROW_API_KEY), that key is registered (hashed); nothing is written to disk.
 * - Otherwise, on first start (no keys yet), a key is generated, stored hashed, and its plaintext written to
 *   `<stateDir>/api-key` with mode 0600 for the operator and the CLI.
 */
export function ensureApiKey(keys: ApiKeyStore, stateDir: string, configuredKey: string | null): EnsureApiKeyResult {
  if (configuredKey !== null) {
    const known = keys.verify(configuredKey) !== undefined;
    keys.add(configuredKey);
    return { created: known ? null : configuredKey, keyFile: null };
  }
  const keyFile = join(stateDir, API_KEY_FILE);
  if (keys.count() > 0) return { created: null, keyFile: existsSync(keyFile) ? keyFile : null };
  const key = generateApiKey();
  // Write the file before registering the key so a crash in between never leaves an unknowable key.
  writeFileSync(keyFile, `${key}\n`, { mode: 0o600 });
  chmodSync(keyFile, 0o600); // an existing file keeps its old mode on writeFileSync
  keys.add(key);
  return { created: key, keyFile };
}
