// Public surface of @burrow/envd for other packages (the orchestrator installs envd into sandbox runtimes).
export { envdRuntimeFiles } from "./runtime-files.js";
export type { EnvdRuntimeFiles } from "./runtime-files.js";
export { createEnvdServer } from "./server.js";
export type { EnvdServer, EnvdServerOptions } from "./server.js";
export { resolveEnvdConfigFromEnv } from "./config.js";
export type { EnvdConfig } from "./config.js";
export { fileSignature } from "./auth/signature.js";
