// Checkpoints → the wire. Field names follow E2B's style (`checkpointID`, `sandboxID`); every checkpoint says what
// it carries: files, not process memory.
import type { CheckpointInfo, CheckpointTree } from "@burrow/orchestrator";
import type { CheckpointTreeWire, CheckpointWire } from "@burrow/protocol";

/** What every checkpoint answer says it holds (CRIU, which could add memory, does not work on these kernels). */
export const CHECKPOINT_CONTENTS_NOTE = "files only: running processes and memory are not kept; they restart on rollback and in branches";

export const checkpointSchema = {
  type: "object",
  required: ["checkpointID", "sandboxID", "parentID", "createdAt", "sizeBytes", "contents"],
  properties: {
    checkpointID: { type: "string" },
    sandboxID: { type: "string", description: "the sandbox it was taken from (it may have ended)" },
    parentID: { type: ["string", "null"], description: "the checkpoint it descends from; null for a root" },
    label: { type: "string" },
    createdAt: { type: "string", format: "date-time" },
    sizeBytes: { type: "integer", description: "disk bytes only this checkpoint holds (what deleting it frees now)" },
    contents: { type: "string", enum: ["files"], description: CHECKPOINT_CONTENTS_NOTE },
    current: { type: "boolean", description: "in a tree: the sandbox's current files descend from this one" },
  },
} as const;

export const checkpointTreeSchema = {
  type: "object",
  required: ["sandboxID", "currentID", "checkpoints"],
  properties: {
    sandboxID: { type: "string" },
    currentID: { type: ["string", "null"] },
    contents: { type: "string", enum: ["files"], description: CHECKPOINT_CONTENTS_NOTE },
    checkpoints: { type: "array", items: checkpointSchema, description: "parents before their children" },
  },
} as const;

export function toCheckpoint(info: CheckpointInfo, currentId?: string | null): CheckpointWire {
  return {
    checkpointID: info.checkpointId,
    sandboxID: info.sandboxId,
    parentID: info.parentId,
    ...(info.label !== undefined ? { label: info.label } : {}),
    createdAt: info.createdAt.toISOString(),
    sizeBytes: info.sizeBytes,
    contents: info.contents,
    ...(currentId !== undefined ? { current: info.checkpointId === currentId } : {}),
  };
}

export function toCheckpointTree(tree: CheckpointTree): CheckpointTreeWire {
  return {
    sandboxID: tree.sandboxId,
    currentID: tree.currentId,
    contents: "files" as const,
    checkpoints: tree.checkpoints.map((c) => toCheckpoint(c, tree.currentId)),
  };
}
