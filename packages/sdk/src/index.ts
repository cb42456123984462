// The Burrow SDK: the official e2b SDK for sandboxes, plus Burrow's own APIs (checkpoint trees, the bus).
export { CommandExitError, type SandboxOpts } from "e2b";
export { Sandbox, Checkpoint, type BranchResult, type CheckpointOpts, type CheckpointInfo, type CheckpointTree } from "./checkpoints/index.js";
export {
  BusClient,
  BurrowApiError,
  type BusMessage,
  type PublishResult,
  type QueueMessage,
  type AgentStatus,
  type BusClientOptions,
  type CallOptions,
  type Payload,
  type SandboxEventFilter,
  type SandboxEvent,
  type RunTarget,
  type ProcessSettings,
  type TerminalSettings,
  type CodeSpec,
  type FileInput,
  type TriggerRule,
  type Trigger,
  type TaskSpec,
  type TaskState,
  type TaskStatus,
  type Watch,
} from "./bus/index.js";
