// Draining a node: cordon it (it takes no new sandboxes), optionally pause its running sandboxes to the filesystem
// (memory: false, so they hold no memory and can be resumed later), then wait until nothing runs there or the time
// is up. Sandboxes cannot move to another node yet (their layers are on this node's disk): a paused sandbox stays
// here and resumes here (connect, auto-resume), cordon or not; what still runs at the end is reported.
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import type { Membership } from "./membership.js";

export interface DrainableSandboxes {
  list(): ReadonlyArray<{ sandboxId: string; state: string }>;
  pause(sandboxId: string, opts: { memory: boolean }): Promise<unknown>;
}

export interface DrainOptions {
  pause: boolean;
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface DrainReport {
  node: string;
  cordoned: boolean;
  /** Sandboxes this drain paused to the filesystem. */
  paused: string[];
  /** Pauses that failed, with why. */
  failed: Array<{ sandboxId: string; error: string }>;
  /** Sandboxes still running when the drain ended (empty: drained). */
  running: string[];
  drained: boolean;
  waitedMs: number;
}

/** Pauses run a few at a time: each stops a sandbox's processes and syncs its files. */
const PAUSE_CONCURRENCY = 4;
const POLL_MS = 250;

export async function drainNode(membership: Membership, sandboxes: DrainableSandboxes, opts: DrainOptions, logger: Logger): Promise<DrainReport> {
  const started = Date.now();
  const node = membership.nodeName;
  await membership.setCordoned(node, true);
  const running = () => sandboxes.list().filter((s) => s.state === "running").map((s) => s.sandboxId);
  const paused: string[] = [];
  const failed: DrainReport["failed"] = [];
  if (opts.pause) {
    const queue = running();
    await Promise.all(
      Array.from({ length: Math.min(PAUSE_CONCURRENCY, queue.length) }, async () => {
        for (let id = queue.shift(); id !== undefined && !opts.signal?.aborted; id = queue.shift()) {
          try {
            await sandboxes.pause(id, { memory: false });
            paused.push(id);
          } catch (err) {
            // Killed or paused by someone else meanwhile is fine; anything else is reported.
            if (!running().includes(id)) continue;
            logger.warn({ err, sandboxId: id }, "drain could not pause a sandbox");
            failed.push({ sandboxId: id, error: err instanceof Error ? err.message : String(err) });
          }
        }
      }),
    );
  }
  const deadline = started + opts.timeoutMs;
  let left = running();
  while (left.length > 0 && Date.now() < deadline && !opts.signal?.aborted) {
    await sleep(Math.min(POLL_MS, Math.max(0, deadline - Date.now())));
    left = running();
  }
  return { node, cordoned: true, paused: paused.sort(), failed, running: left.sort(), drained: left.length === 0, waitedMs: Date.now() - started };
}
