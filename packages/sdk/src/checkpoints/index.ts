export { Sandbox } from "./sandbox.js";
export { Checkpoint, type BranchResult, type CheckpointOpts } from "./checkpoint.js";
export type { CheckpointInfo, CheckpointTree } from "./checkpoint-api.js";
