// Template builds: the builder, its bases, Dockerfiles, start commands and shipped definitions.
export { TemplateBuilder, type TemplateBuilderDeps } from "./builder/template-builder.js";
export type { BuildStatus, BuildStatusReason, BuildCounters, RequestBuildInput } from "./builder/build-registry.js";
export type { BuildStatusPage, RequestedBuild, TemplateSummary } from "@burrow/protocol";
export { parseBuildSpec, type BuildSpec, type BuildStep, type StepType } from "./builder/build-spec.js";
export type { BuildLogEntry, BuildLogLevel } from "./builder/build-log.js";
export { TemplateBuildError } from "./builder/template-build-error.js";
export { parseTemplateName, DEFAULT_TAG } from "./builder/template-names.js";
export { SUPPORTED_BASES_HINT } from "./bases/resolve-base.js";
export { importImage, type ImportedImage } from "./bases/oci-image.js";
export { convertWhiteouts } from "./bases/whiteouts.js";
export { parseDockerfile, DockerfileError, type ParsedDockerfile, type DockerfileStep } from "./dockerfile/parse-dockerfile.js";
export {
  startTemplateProcess,
  templateReadyTimeoutMs,
  START_COMMAND_TAG,
  READY_TIMEOUT_ENV,
  type StartTemplateOptions,
} from "./start-template-process.js";
export {
  ensureCodeInterpreterTemplate,
  codeInterpreterSpec,
  CODE_INTERPRETER_ALIAS,
  CODE_INTERPRETER_PACKAGES,
} from "./code-interpreter.js";
export { ensureMcpGatewayTemplate, mcpGatewaySpec, MCP_GATEWAY_TEMPLATE, MCP_GATEWAY_PORT } from "./mcp-gateway.js";
export type { TemplateManifest, TemplateRuntime, TemplateBuildEntry } from "./template-store.js";
