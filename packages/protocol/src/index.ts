// Wire contracts shared by every Burrow package: generated envd protobuf code, protocol constants, E2B's template
// build shapes and the one error type with its code set.
export * as processPb from "./gen/process/process_pb.js";
export * as filesystemPb from "./gen/filesystem/filesystem_pb.js";
export { Process } from "./gen/process/process_pb.js";
export { Filesystem } from "./gen/filesystem/filesystem_pb.js";
export {
  ENVD_PORT,
  ENVD_VERSION,
  CODE_INTERPRETER_PORT,
  DEFAULT_USER,
  SANDBOX_ID_PATTERN,
  RUNTIME_MOUNT,
} from "./constants.js";
export * as envelopePb from "./gen/bus/envelope_pb.js";
export type { SandboxEventFilter, RunTarget, ProcessSettings, TerminalSettings, CodeSpec } from "./automation.js";
export {
  BurrowError,
  Code,
  codeName,
  codeFromAbort,
  codeFromHttpStatus,
  codeFromNodeError,
  errnoOf,
  httpStatusFromCode,
  type BurrowErrorInit,
} from "./errors/index.js";
export type {
  BuildStatus,
  BuildLogLevel,
  BuildLogEntry,
  BuildStatusReason,
  RequestedBuild,
  BuildStatusPage,
  TemplateSummary,
  TemplateBuildSummary,
  TemplateWithBuilds,
  TemplateTag,
} from "./template-builds.js";
export type { CheckpointWire, CheckpointTreeWire } from "./checkpoints.js";
export type { NodeCpu, NodeLoad, NodeRecord, NodeView, PoolFillEntry, NodeListWire } from "./nodes.js";
export type { QueueDepthWire, DeadLetterWire, DeadLetterPageWire, RequeuedAllWire, DroppedAllWire } from "./queues.js";
