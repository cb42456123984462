// A kill asked for a lost sandbox. The client is answered as for a sandbox that is gone (404), but the wish is kept
// on the lost record, so that the node, if it comes back with the sandbox, kills it rather than taking it back
// (reconcile.ts): a sandbox its user killed must not come back to life with its node.
import type { Logger } from "pino";
import type { SandboxOwners } from "./sandbox-owners.js";

/** Rewrites to a record that changed meanwhile are tried again this many times. */
const ATTEMPTS = 3;

/** Mark the lost record killed; false when there is no lost record (any more) to mark. Never throws. */
export async function rememberKill(owners: SandboxOwners, sandboxId: string, logger: Logger): Promise<boolean> {
  try {
    for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
      const stored = await owners.read(sandboxId);
      if (!stored || stored.record.lostAt === undefined) return false;
      if (stored.record.killedAt !== undefined) return true;
      if (await owners.replace(sandboxId, { ...stored.record, killedAt: new Date().toISOString() }, stored.revision)) {
        logger.warn({ sandboxId, node: stored.record.node }, "a lost sandbox was killed; its node will end it if it comes back");
        return true;
      }
    }
  } catch (err) {
    logger.warn({ err, sandboxId }, "could not keep the kill of a lost sandbox");
  }
  return false;
}
