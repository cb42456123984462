// Burrow's bus: one Bus interface, an embedded (SQLite) and a NATS JetStream backend, and the agent layers on top.

// ---- Bus ----
export type {
  Bus, BusKind, BusMsg, CallOptions, Consumer, ConsumerConfig, ConsumerInfo, DeadLetterNote, DurableMsg, DurablePublishOptions, KV,
  KvEntry, KvOptions, MsgHeaders, NextOptions, PubAck, PublishOptions, Retention, StoredMessage, StreamConfig, StreamInfo, SubscribeOptions,
  Subscription,
} from "./types.js";
export { createBus, type BusConfig } from "./create-bus.js";
export { EmbeddedBus, type EmbeddedBusOptions } from "./embedded/embedded-bus.js";
export { NatsBus, type NatsBusOptions } from "./nats/nats-bus.js";
export { kvStoredKeys } from "./nats/kv-stored-keys.js";
export { isTransientJetStreamError, whenJetStreamAnswers } from "./nats/jetstream-ready.js";
export { DLQ_STREAM, DLQ_HEADER, deadLetterSubject, type DeadLetterReason } from "./dead-letter.js";
export { assertSubject, matchSubject, encodeToken, decodeToken } from "./subject.js";
export { createBusMetrics, type BusMetrics } from "./metrics.js";
export { injectTrace, extractTrace } from "./trace.js";

// ---- Agent messages: envelope, signing, verification ----
export { generateAgentKey, agentKeyFromPem, keyIdOf, type AgentKey } from "./envelope/agent-key.js";
export { BusKeyRegistry, KEY_BUCKET, assertAgentId, type KeyRegistry, type RegisteredKey } from "./envelope/key-registry.js";
export {
  sealEnvelope, encodeEnvelope, decodeEnvelope, envelopePayload, routeOf, ENVELOPE_VERSION, DEFAULT_COMPRESS_THRESHOLD_BYTES,
  DEFAULT_MAX_HOPS, DEFAULT_TTL_MS, type Route, type SealOptions,
} from "./envelope/seal.js";
export { signingBytes } from "./envelope/canonical.js";
export { EnvelopeVerifier, type RejectReason, type VerifierOptions } from "./envelope/verifier.js";
export { AGENT_STREAM, AGENT_SUBJECTS, inboxSubject, routeSubject, durableName } from "./envelope/routes.js";
export { AgentMessenger, ensureAgentStream, type AgentMessengerOptions, type ReceivedMessage, type SendOptions } from "./envelope/messenger.js";

// ---- Work queues ----
export { WorkQueue, QueueConsumer, MAX_PRIORITY, queueStream, laneSubject, type WorkQueueOptions, type EnqueueOptions, type QueueMessage } from "./queue/work-queue.js";
export { QueueAdmin, type QueueDepth, type DeadLetter } from "./queue/queue-admin.js";

// ---- Liveness and failover ----
export {
  Heartbeater, LivenessMonitor, sendHeartbeat, presenceBucket, PRESENCE_BUCKET, type AgentState, type AgentStatus,
  type HeartbeatInfo, type LivenessEvent, type LivenessMonitorOptions,
} from "./liveness/presence.js";
export { GroupWorker, LEASE_BUCKET, type GroupWorkerOptions } from "./liveness/standby.js";

// ---- Sandbox events ----
export {
  SANDBOX_EVENT_STREAM, SANDBOX_EVENT_SUBJECTS, sandboxEventSubject, sandboxEventPattern, matchesSandboxEvent,
  parseSandboxEventSubject, encodeSandboxEvent, decodeSandboxEvent, ensureSandboxEventStream, publishSandboxEvent,
  subscribeSandboxEvents, type SandboxEvent, type SandboxEventCategory, type SandboxEventFilter, type LifecycleEvent,
  type LifecycleEventType, type ProcessEvent, type ProcessEventType, type FilesystemEvent, type FilesystemEventType,
  type CodeEvent, type CodeEventType,
} from "./events/sandbox-events.js";
export {
  DEFAULT_SANDBOX_EVENT_MAX_AGE_MS, DEFAULT_SANDBOX_EVENT_MAX_BYTES, sandboxEventStreamLimits, type SandboxEventStreamLimits,
} from "./events/event-stream-limits.js";

// ---- Triggers and tasks ----
export { codeToCommand, shellQuote, type SandboxRunner, type RunTarget, type RunOptions, type RunResult, type CodeExecution, type CodeSpec, type ProcessSettings, type TerminalSettings } from "./triggers/sandbox-runner.js";
export { TaskService, TaskWorker, type TaskSpec, type TaskState, type TaskStatus, type TaskServiceOptions } from "./triggers/task-service.js";
export { TriggerEngine, renderCommand, eventEnvVars, type TriggerRule, type TriggerEngineOptions } from "./triggers/trigger-engine.js";
