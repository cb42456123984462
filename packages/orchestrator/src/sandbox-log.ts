// A sandbox's log as the control plane reads it: envd.log in its directory, from a byte offset. envd empties the
// file when it grows past its cap (envd/src/log.ts), so an offset past the end means "start again from 0".
import { open } from "node:fs/promises";
import { join } from "node:path";
import type { SandboxLogChunk } from "./orchestrator-api.js";

export const SANDBOX_LOG_FILE = "envd.log";

export async function readSandboxLogFile(dir: string, offset: number, maxBytes: number): Promise<SandboxLogChunk> {
  let file;
  try {
    file = await open(join(dir, SANDBOX_LOG_FILE), "r");
  } catch (err) {
    // Not written yet (a launch under way) or already removed (a teardown racing the read).
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { data: Buffer.alloc(0), next: offset };
    throw err;
  }
  try {
    const { size } = await file.stat();
    const from = size < offset ? 0 : offset;
    const length = Math.min(size - from, maxBytes);
    if (length <= 0) return { data: Buffer.alloc(0), next: from };
    const data = Buffer.alloc(length);
    const { bytesRead } = await file.read(data, 0, length, from);
    return { data: data.subarray(0, bytesRead), next: from + bytesRead };
  } finally {
    await file.close();
  }
}
