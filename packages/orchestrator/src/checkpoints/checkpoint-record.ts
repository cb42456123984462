// A checkpoint on disk: `<state>/checkpoints/<id>/` holds its record (checkpoint.json) and its files layer (files/:
// a read-only btrfs snapshot of the sandbox's directory, or a reflink copy of it without btrfs; the overlay upper
// is files/upper). The record is written last and removed first, so a directory without a valid record is a
// checkpoint half made or half deleted, and start-up removes it.
import { readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { CheckpointInfo } from "../orchestrator-api.js";
import { copyEgressRules, type EgressRules } from "../network/egress-rules.js";
import { upgradeLegacyRules } from "../network/legacy-egress-rules.js";
import type { TemplateRuntime } from "../templates/template-store.js";
import type { SandboxLimits } from "../types.js";

export const CHECKPOINT_FORMAT = 1;
const RECORD_FILE = "checkpoint.json";
const FILES_DIR = "files";

export interface CheckpointRecordFile {
  format: typeof CHECKPOINT_FORMAT;
  checkpointId: string;
  sandboxId: string;
  /** The checkpoint the sandbox's state descended from when this one was taken; null for a root. */
  parentId: string | null;
  label?: string;
  createdAt: string;
  /** What the sandbox started from: its children start on the same layers and runtime. */
  templateId: string;
  layers: string[];
  runtime?: TemplateRuntime;
  limits: SandboxLimits;
  allowInternetAccess: boolean;
  /** allowOut/denyOut and proxying of the sandbox when it was taken (absent: none); children are restricted alike. */
  egress?: EgressRules;
  owner?: string;
  /** The files layer, relative to the checkpoint's directory; the overlay upper is `<files>/upper`. */
  files: string;
  /** A process memory image, for a future driver that can take one; null: files only (CRIU does not work here). */
  memory: null;
}

export function checkpointDir(root: string, checkpointId: string): string {
  return join(root, checkpointId);
}

export function checkpointFilesDir(root: string, checkpointId: string): string {
  return join(root, checkpointId, FILES_DIR);
}

export const CHECKPOINT_FILES_DIR = FILES_DIR;

export async function writeCheckpointRecord(root: string, record: CheckpointRecordFile): Promise<void> {
  const file = join(checkpointDir(root, record.checkpointId), RECORD_FILE);
  await writeFile(`${file}.tmp`, `${JSON.stringify(record, null, 2)}\n`);
  await rename(`${file}.tmp`, file);
}

/** The record in a checkpoint's directory; undefined when missing or not a valid record of that id. */
export async function readCheckpointRecord(root: string, checkpointId: string): Promise<CheckpointRecordFile | undefined> {
  try {
    const parsed = JSON.parse(await readFile(join(checkpointDir(root, checkpointId), RECORD_FILE), "utf8")) as unknown;
    if (!isCheckpointRecord(parsed) || parsed.checkpointId !== checkpointId) return undefined;
    // Checkpoints taken before `proxied` existed say it with reserved deny entries.
    return parsed.egress ? { ...parsed, egress: upgradeLegacyRules(parsed.egress) } : parsed;
  } catch {
    return undefined;
  }
}

/** Unlink the record: from now on the directory is garbage (removed now by the caller, or at the next start). */
export function recordFile(root: string, checkpointId: string): string {
  return join(checkpointDir(root, checkpointId), RECORD_FILE);
}

function isCheckpointRecord(value: unknown): value is CheckpointRecordFile {
  const v = value as Partial<CheckpointRecordFile> | null;
  return (
    v !== null &&
    typeof v === "object" &&
    v.format === CHECKPOINT_FORMAT &&
    typeof v.checkpointId === "string" &&
    typeof v.sandboxId === "string" &&
    (v.parentId === null || typeof v.parentId === "string") &&
    typeof v.createdAt === "string" &&
    typeof v.templateId === "string" &&
    Array.isArray(v.layers) &&
    v.layers.every((layer) => typeof layer === "string") &&
    typeof v.limits === "object" &&
    v.limits !== null &&
    typeof v.allowInternetAccess === "boolean" &&
    typeof v.files === "string" &&
    v.memory === null
  );
}

export function checkpointInfo(record: CheckpointRecordFile, sizeBytes: number): CheckpointInfo {
  return {
    checkpointId: record.checkpointId,
    sandboxId: record.sandboxId,
    parentId: record.parentId,
    ...(record.label !== undefined ? { label: record.label } : {}),
    createdAt: new Date(record.createdAt),
    sizeBytes,
    templateId: record.templateId,
    ...(record.owner !== undefined ? { owner: record.owner } : {}),
    allowInternetAccess: record.allowInternetAccess,
    ...(record.egress ? { egress: copyEgressRules(record.egress) } : {}),
    contents: "files",
  };
}
