// Public surface of @burrow/orchestrator.
export type {
  Orchestrator,
  SandboxRecord,
  SandboxState,
  PauseKind,
  SandboxLifecycleEvent,
  TemplateInfo,
  CreateSandboxOptions,
  SandboxMetricSample,
  SandboxExitReason,
  SnapshotInfo,
  SnapshotSandboxOptions,
  SnapshotQuota,
  SnapshotUsage,
  ForkSandboxOptions,
  ForkResult,
  CheckpointInfo,
  CheckpointTree,
  CheckpointSandboxOptions,
  BranchCheckpointOptions,
  DeleteCheckpointOptions,
} from "./orchestrator-api.js";
export type { SandboxLimits } from "./types.js";
export type { EgressEvent, EgressRuleLists, SandboxEgress, VolumeHost, VolumeMount } from "./orchestrator-api.js";
export type { EgressInterceptor } from "./egress/header-relay.js";
export { parseUpstreamProxy, type UpstreamProxy } from "./egress/upstream-proxy.js";
export { VOLUME_ROOT_UID } from "./volumes/volume-storage.js";
export { ALL_TRAFFIC, parseEgressTarget, type EgressProxying, type EgressTarget } from "./network/egress-rules.js";
export { LocalOrchestrator, type LocalOrchestratorOptions } from "./local-orchestrator.js";
export {
  resolveOrchestratorConfig,
  DEFAULT_STATE_DIR,
  DEFAULT_CACHE_DIR,
  DEFAULT_SUBNET,
  DEFAULT_POOL_SHELLS,
  DEFAULT_LIMITS,
  type OrchestratorConfig,
  type PoolConfig,
} from "./config.js";
export { SNAPSHOT_REFUSALS } from "./snapshots/snapshot-charges.js";
export type { EnvdRuntimeSource } from "./runtime.js";
export type { Logger } from "./logger.js";
export * from "./envd-client/index.js";
export {
  TemplateBuilder,
  parseDockerfile,
  DockerfileError,
  startTemplateProcess,
  ensureCodeInterpreterTemplate,
  CODE_INTERPRETER_ALIAS,
  TemplateBuildError,
  type TemplateManifest,
} from "./templates/index.js";
export type { PoolFill, SandboxLogChunk } from "./orchestrator-api.js";
export type { ImportSandboxOptions, MovableSandbox, MovedBootSpec } from "./orchestrator-api.js";
