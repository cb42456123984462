// A node's own sandboxes against the owners bucket, after the node was away (restarted, or cut off long enough to be
// judged down). For each sandbox the node has: no record, it is registered again; its own record marked lost, the
// record is taken back (a revision-checked rewrite) and a `recovered` event sent; another node's record under the
// id, the local copy is killed, so that one id never names two live sandboxes; a lost record whose sandbox was killed
// meanwhile (lost-kill.ts), the sandbox is killed and the record removed. A lost record is taken back rather
// than its sandbox killed: it is the same sandbox with its state intact, nobody else can have taken the id meanwhile
// (a lost record still holds it), and a client that was told `lost` is told `recovered`. A record of this node for a
// sandbox it does not have is removed, unless it is `movable`: a take-over this node claimed and did not finish.
import type { Logger } from "pino";
import { BurrowError, Code } from "@burrow/protocol";
import type { SandboxEvents } from "../lifecycle/events.js";
import { OWNER_RECORD_VERSION, type OwnerRecord, type SandboxOwners } from "./sandbox-owners.js";

/** What the node knows of one of its sandboxes. */
export interface LocalSandbox {
  sandboxId: string;
  templateId: string;
  metadata: Record<string, string>;
}

/** The node's sandboxes, for reconciling. */
export interface LocalSandboxes {
  get(sandboxId: string): LocalSandbox | undefined;
  /** End the local copy of a sandbox whose id another node owns. */
  kill(sandboxId: string): Promise<unknown>;
}

export type ReconcileOutcome = "kept" | "registered" | "recovered" | "killed" | "gone" | "pending_move";

export interface ReconcileDeps {
  owners: SandboxOwners;
  nodeName: string;
  local: LocalSandboxes;
  events: SandboxEvents;
  logger: Logger;
}

/** Rewrites lost to a record that changed meanwhile are tried again this many times. */
const ATTEMPTS = 3;

export async function reconcileSandbox(d: ReconcileDeps, sandboxId: string): Promise<ReconcileOutcome> {
  for (let attempt = 1; ; attempt++) {
    const sandbox = d.local.get(sandboxId);
    if (!sandbox) return "gone";
    const stored = await d.owners.read(sandboxId);
    if (!stored) {
      try {
        await d.owners.claim(sandboxId, sandbox.templateId);
        d.logger.info({ sandboxId }, "a sandbox of this node had no owner record; registered it again");
        return "registered";
      } catch (err) {
        // Another node created a record between the read and the create: read it again.
        if (err instanceof BurrowError && err.code === Code.AlreadyExists && attempt < ATTEMPTS) continue;
        throw err;
      }
    }
    const { record, revision } = stored;
    if (record.node !== d.nodeName) {
      d.logger.warn({ sandboxId, owner: record.node, lost: record.lostAt !== undefined }, "another node owns the id of a sandbox this node has; killing the local copy");
      await d.local.kill(sandboxId);
      return "killed";
    }
    if (record.lostAt === undefined) return "kept";
    if (record.killedAt !== undefined) {
      // Killed by its user while it was lost (lost-kill.ts): ended here, not taken back.
      d.logger.warn({ sandboxId, lostAt: record.lostAt, killedAt: record.killedAt }, "a sandbox killed while it was lost is ended now that this node has it again");
      await d.local.kill(sandboxId);
      await d.owners.release(sandboxId);
      return "killed";
    }
    const { lostAt, ...rest } = record;
    const back: OwnerRecord = { ...rest, v: Math.max(record.v, OWNER_RECORD_VERSION), templateId: record.templateId ?? sandbox.templateId };
    if (!(await d.owners.replace(sandboxId, back, revision))) {
      if (attempt < ATTEMPTS) continue;
      throw new BurrowError(Code.Aborted, `the owner record of sandbox ${sandboxId} kept changing while this node took it back`, { reason: "revision_conflict" });
    }
    d.events.emit({ type: "recovered", sandboxId, templateId: sandbox.templateId, metadata: sandbox.metadata, timestamp: new Date() });
    d.logger.warn({ sandboxId, lostAt }, "sandbox recovered: this node has it again after it was reported lost");
    return "recovered";
  }
}

/** Every local sandbox reconciled (each failure logged, the others go on), then this node's stale records removed. */
export async function reconcileOwnership(d: ReconcileDeps, localIds: readonly string[]): Promise<Map<string, ReconcileOutcome>> {
  const outcomes = new Map<string, ReconcileOutcome>();
  for (const sandboxId of localIds) {
    const outcome = await reconcileSandbox(d, sandboxId).catch((err: unknown) => {
      d.logger.error({ err, sandboxId }, "could not reconcile a sandbox's owner record");
      return undefined;
    });
    if (outcome) outcomes.set(sandboxId, outcome);
  }
  const local = new Set(localIds);
  for (const [sandboxId, { record }] of await d.owners.ownedBy(d.nodeName)) {
    if (local.has(sandboxId)) continue;
    if (record.movable !== undefined && record.killedAt === undefined) {
      // A take-over cut short after its claim (sandbox-moves.ts): the published archive may be the only copy left.
      // The record stays this node's and movable, so a connect takes it over here again; removing it would lose it.
      d.logger.warn({ sandboxId, movedFrom: record.movedFrom }, "a take-over of a sandbox was cut short; it stays movable and is taken over again at its next connect");
      outcomes.set(sandboxId, "pending_move");
      continue;
    }
    await d.owners.release(sandboxId).catch((err: unknown) => d.logger.warn({ err, sandboxId }, "could not remove a stale owner record"));
  }
  return outcomes;
}
