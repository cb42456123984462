// Draining a node: cordon it (it takes no new sandboxes), optionally pause its running sandboxes to the filesystem
// (memory: false, so they hold no memory and can be resumed later), then wait until nothing runs there or the time
// is up. With `move`, each running sandbox is paused to the filesystem, published and handed to the best other node,
// which resumes it there (sandbox-moves.ts): same id, files and envd token, so SDK handles keep working; this node's
// copy is then removed. Without it a paused sandbox stays here and resumes here (connect, auto-resume), cordon or
// not; what still runs at the end is reported.
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import type { Membership } from "./membership.js";

export interface DrainableSandboxes {
  list(): ReadonlyArray<{ sandboxId: string; state: string }>;
  pause(sandboxId: string, opts: { memory: boolean }): Promise<unknown>;
  /** Remove this node's copy of a sandbox another node has taken over: a move, not an end (no `killed` event). */
  removeMovedAway(sandboxId: string): Promise<unknown>;
}

/** Hands a filesystem-paused sandbox to another node (SandboxMoves.handOver); resolves that node's name. */
export type HandOver = (sandboxId: string, signal?: AbortSignal) => Promise<string>;

export interface DrainOptions {
  pause: boolean;
  /** Move the running sandboxes to other nodes (implies pausing them to the filesystem first). */
  move?: HandOver | undefined;
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface DrainReport {
  node: string;
  cordoned: boolean;
  /** Sandboxes this drain paused to the filesystem (and did not move). */
  paused: string[];
  /** With `move`: sandboxes now on another node, and which. */
  moved: Array<{ sandboxId: string; node: string }>;
  /** Pauses that failed, with why. */
  failed: Array<{ sandboxId: string; error: string }>;
  /** Sandboxes still running when the drain ended (empty: drained). */
  running: string[];
  drained: boolean;
  waitedMs: number;
}

/** Pauses run a few at a time: each stops a sandbox's processes and syncs its files. */
const PAUSE_CONCURRENCY = 4;
/** Moves run two at a time: each archives a writable layer here and cold-boots the sandbox on another node. */
const MOVE_CONCURRENCY = 2;
const POLL_MS = 250;

export async function drainNode(membership: Membership, sandboxes: DrainableSandboxes, opts: DrainOptions, logger: Logger): Promise<DrainReport> {
  const started = Date.now();
  const node = membership.nodeName;
  await membership.setCordoned(node, true);
  const running = () => sandboxes.list().filter((s) => s.state === "running").map((s) => s.sandboxId);
  const paused: string[] = [];
  const moved: DrainReport["moved"] = [];
  const failed: DrainReport["failed"] = [];
  if (opts.move) {
    const handOver = opts.move;
    const queue = running();
    await Promise.all(
      Array.from({ length: Math.min(MOVE_CONCURRENCY, queue.length) }, async () => {
        for (let id = queue.shift(); id !== undefined && !opts.signal?.aborted; id = queue.shift()) {
          let pausedHere = false;
          try {
            await sandboxes.pause(id, { memory: false });
            pausedHere = true;
            const node = await handOver(id, opts.signal);
            moved.push({ sandboxId: id, node });
            // The other node owns it now: this copy must not live on beside it (nor be counted as running here).
            await sandboxes.removeMovedAway(id).catch((err: unknown) => logger.warn({ err, sandboxId: id }, "could not remove the local copy of a moved sandbox"));
          } catch (err) {
            if (!pausedHere && !running().includes(id)) continue;
            logger.warn({ err, sandboxId: id }, "drain could not move a sandbox");
            if (pausedHere) paused.push(id);
            failed.push({ sandboxId: id, error: err instanceof Error ? err.message : String(err) });
          }
        }
      }),
    );
  } else if (opts.pause) {
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
  moved.sort((a, b) => a.sandboxId.localeCompare(b.sandboxId));
  return { node, cordoned: true, paused: paused.sort(), moved, failed, running: left.sort(), drained: left.length === 0, waitedMs: Date.now() - started };
}
