// Checkpoints by id, whether or not their sandbox still runs: read one, branch from it, delete it.
import type { ConnectionOpts } from "e2b";
import { BurrowApiError, type CallOptions } from "../bus/http.js";
import { CheckpointApi, type CheckpointInfo } from "./checkpoint-api.js";
import { Sandbox } from "./sandbox.js";

/** One child of a branch: a connected sandbox, or why it did not start. */
export type BranchResult = { sandbox: Sandbox; error?: undefined } | { sandbox?: undefined; error: BurrowApiError };

export type CheckpointOpts = ConnectionOpts & CallOptions;

function api(opts: CheckpointOpts): CheckpointApi {
  const apiUrl = opts.apiUrl ?? process.env["E2B_API_URL"];
  if (!apiUrl) throw new Error("apiUrl (or E2B_API_URL) is required to reach Burrow's API");
  return new CheckpointApi({ apiUrl, apiKey: opts.apiKey ?? process.env["E2B_API_KEY"], ...(opts.requestTimeoutMs ? { requestTimeoutMs: opts.requestTimeoutMs } : {}) });
}

export const Checkpoint = {
  get(checkpointId: string, opts: CheckpointOpts = {}): Promise<CheckpointInfo> {
    return api(opts).get(checkpointId, opts);
  },

  /**
   * Start `count` sandboxes from a checkpoint's files (fresh processes: memory is not kept). Each child succeeds or
   * fails on its own; the started ones come back connected.
   */
  async branch(checkpointId: string, count: number, opts: CheckpointOpts & { timeoutMs?: number } = {}): Promise<BranchResult[]> {
    const outcomes = await api(opts).branch(checkpointId, count, {
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...(opts.timeoutMs !== undefined ? { timeoutSec: Math.ceil(opts.timeoutMs / 1000) } : {}),
    });
    return Promise.all(
      outcomes.map(async (outcome): Promise<BranchResult> => {
        if (!outcome.sandbox) return { error: new BurrowApiError(outcome.error?.code ?? 500, outcome.error?.message ?? "branch failed") };
        const { signal: _signal, ...connectOpts } = opts;
        return { sandbox: await Sandbox.connect(outcome.sandbox.sandboxID, connectOpts) };
      }),
    );
  },

  /** Delete a checkpoint; with `cascade`, the checkpoints descending from it too. Resolves the ids deleted. */
  delete(checkpointId: string, opts: CheckpointOpts & { cascade?: boolean } = {}): Promise<string[]> {
    return api(opts).delete(checkpointId, opts);
  },
};
