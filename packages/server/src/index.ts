// Public surface of @burrow/server.
export { startServer, type RunningServer, type ServerDeps } from "./server.js";
export type { HttpMount, HttpMountAuth } from "./http-mounts.js";
export {
  resolveServerConfig,
  DEFAULT_HOST,
  DEFAULT_PORT,
  DEFAULT_STATE_DIR,
  DEFAULT_TIMEOUT_SEC,
  DEFAULT_MAX_TIMEOUT_SEC,
  DEFAULT_BODY_LIMIT_BYTES,
  DEFAULT_METRICS_INTERVAL_MS,
  DEFAULT_METRICS_RETENTION,
  type ServerConfig,
  type ServerConfigInput,
} from "./config.js";
export { toE2bError, type E2bErrorBody } from "./errors.js";
export { ensureApiKey, generateApiKey, API_KEY_FILE, type EnsureApiKeyResult } from "./auth/ensure-api-key.js";
export { openStore, type Store } from "./store/store.js";
export { hashApiKey, type ApiKeyInfo } from "./store/api-keys.js";
export type { SandboxRow, SandboxRowState } from "./store/sandboxes.js";
export {
  SandboxEvents,
  type SandboxLifecycleEvent,
  type SandboxLifecycleEventType,
  type SandboxEventListener,
  type SandboxEventStreamOptions,
} from "./lifecycle/events.js";
export type { SandboxService, CreateSandboxInput } from "./lifecycle/sandbox-service.js";
export type { Gateway, UpstreamResolver } from "./gateway/gateway.js";
export { fileSignature } from "./gateway/signature.js";
export { ensureLocalCa, localCaPaths, type LocalCa, type LocalCaPaths } from "./tls/index.js";
