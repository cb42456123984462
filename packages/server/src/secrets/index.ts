// Secrets: E2B's write-only secret store, encrypted at rest, and the placeholder resolution egress uses.
import { loadOrCreateSecretsKey } from "./secret-key.js";
import { SecretCipher } from "./secret-cipher.js";
import { SecretService } from "./secret-service.js";
import type { SecretStore } from "./secret-store.js";

export { SecretService, type SecretInfo, type SecretPage, DEFAULT_SECRET_PAGE, MAX_SECRET_PAGE } from "./secret-service.js";
export { SecretStore, type SecretRow } from "./secret-store.js";
export type { SecretOwner } from "./secret-owner.js";
export { SECRETS_KEY_FILE } from "./secret-key.js";

/** The secret service of a state directory: its key (created on first use) and the store's table. */
export function openSecrets(stateDir: string, store: SecretStore): SecretService {
  return new SecretService(store, new SecretCipher(loadOrCreateSecretsKey(stateDir)));
}
