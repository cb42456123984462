export { BusClient, type BusMessage, type PublishResult, type QueueMessage, type AgentStatus } from "./bus-client.js";
export { BurrowApiError, type BusClientOptions, type CallOptions, type Payload } from "./http.js";
export type {
  SandboxEventFilter, SandboxEvent, RunTarget, ProcessSettings, TerminalSettings, CodeSpec, FileInput,
  TriggerRule, Trigger, TaskSpec, TaskState, TaskStatus, Watch,
} from "./automation.js";
export type { QueueDepth, DeadLetter, DeadLetterPage } from "./queue-admin.js";
