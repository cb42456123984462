// The orchestrator's own durable record of a sandbox, next to its writable layer. It is what a restarted
// orchestrator reads to re-adopt a sandbox that kept running, or to reap what a dead one left.
import { readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { SandboxLimits } from "./types.js";

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
}

const RECORD_FILE = "sandbox.json";

export async function writeRecord(dir: string, record: SandboxRecordFile): Promise<void> {
  const file = join(dir, RECORD_FILE);
  await writeFile(`${file}.tmp`, JSON.stringify(record));
  await rename(`${file}.tmp`, file);
}

export async function readRecord(dir: string): Promise<SandboxRecordFile | undefined> {
  try {
    return JSON.parse(await readFile(join(dir, RECORD_FILE), "utf8")) as SandboxRecordFile;
  } catch {
    return undefined;
  }
}
