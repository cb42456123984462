// The Burrow SDK: the official e2b SDK for sandboxes, plus Burrow's own APIs.
export { Sandbox, CommandExitError, type SandboxOpts } from "e2b";
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
} from "./bus/index.js";
