// The orchestrator's own durable record of a sandbox, next to its writable layer. It is what a restarted
// orchestrator reads to re-adopt a sandbox that kept running, or to reap what a dead one left.
import { readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { EgressRules } from "./network/egress-rules.js";
import { upgradeLegacyRules } from "./network/legacy-egress-rules.js";
import type { PauseKind, VolumeMount } from "./orchestrator-api.js";
import type { TemplateRuntime } from "./templates/template-store.js";
import type { SandboxLimits } from "./types.js";

/**
 * What a cold boot needs to bring a sandbox back as its create made it: the layers it started on (a template
 * rebuilt since keeps them in its build history), the template's runtime (start and ready commands, ENV, user,
 * workdir) and envd's /init as the create sent it. The record lives beside the writable layer, outside anything
 * the sandbox can reach, so the access token and env vars stay the host's.
 */
export interface BootSpec {
  layers: string[];
  runtime?: TemplateRuntime | undefined;
  /** The create's env vars (the template's ENV is merged under them at /init, as at create). */
  envVars: Record<string, string>;
  accessToken: string;
}

export interface SandboxRecordFile {
  sandboxId: string;
  templateId: string;
  /** Host pid of the sandbox's init, and its start time to tell it from a reused pid. */
  pid: number;
  pidStartTime: string;
  /**
   * Host uid owning the sandbox's user namespace (its lease is host-wide, kept by the launcher for as long as the
   * init lives). Absent in records written before sandboxes had their own owners: host root.
   */
  usernsOwner?: number;
  /** Host uid of root in the sandbox: its own range's start, or the shared uidBase. Absent in older records. */
  hostUidBase?: number;
  ip: string;
  hostVeth: string;
  limits: SandboxLimits;
  allowInternetAccess: boolean;
  /** allowOut/denyOut and proxying set by setSandboxEgress or the claim; re-applied at a cold boot. Absent: none. */
  egress?: EgressRules | undefined;
  startedAt: string;
  /** Secret that authorises the orchestrator's /init calls to envd. */
  initToken: string;
  /** True while the sandbox waits in the warm pool, unclaimed. */
  pooled: boolean;
  /**
   * "paused" while its cgroup is frozen (pause keeps memory). Written before freezing and after thawing, so a
   * restarted orchestrator that finds "paused" freezes again and one that finds "running" thaws. Absent in
   * records written before pausing existed: running.
   */
  state?: "running" | "paused";
  /**
   * While paused: how, and since when (ISO time). Absent in a paused record written before pause kinds: memory.
   * A filesystem pause is written before its first destructive step (cold-boot.ts), so a restart in between ends
   * the halt instead of reaping the sandbox.
   */
  pause?: { kind: PauseKind; since: string };
  /** The sandbox's /proc/sys/kernel/random/boot_id, new at each launch. Absent in older records. */
  bootId?: string;
  /** Set when the sandbox is claimed (create); without it (older records) a filesystem pause is refused. */
  boot?: BootSpec;
  /** Volumes bound into it at launch, and again at every cold boot. Absent: none. */
  volumes?: VolumeMount[];
}

const RECORD_FILE = "sandbox.json";

export async function writeRecord(dir: string, record: SandboxRecordFile): Promise<void> {
  const file = join(dir, RECORD_FILE);
  // Root's only: it holds envd's tokens and the create's env vars.
  await writeFile(`${file}.tmp`, JSON.stringify(record), { mode: 0o600 });
  await rename(`${file}.tmp`, file);
}

/** How a record's sandbox is paused, undefined while it runs. */
export function pauseKindOf(record: SandboxRecordFile): PauseKind | undefined {
  return record.state === "paused" ? (record.pause?.kind ?? "memory") : undefined;
}

export async function readRecord(dir: string): Promise<SandboxRecordFile | undefined> {
  try {
    const record = JSON.parse(await readFile(join(dir, RECORD_FILE), "utf8")) as SandboxRecordFile;
    // Records written before `proxied` existed say it with reserved deny entries.
    return record.egress ? { ...record, egress: upgradeLegacyRules(record.egress) } : record;
  } catch {
    return undefined;
  }
}
