// The e2b SDK's Sandbox with Burrow's checkpoint trees: `Sandbox.create()` and `Sandbox.connect()` return this
// class, so everything of the official SDK works as before and `sandbox.checkpoint()` and friends are there too.
import { Sandbox as E2bSandbox } from "e2b";
import type { CallOptions } from "../bus/http.js";
import { CheckpointApi, type CheckpointInfo, type CheckpointTree } from "./checkpoint-api.js";

export class Sandbox extends E2bSandbox {
  private get checkpointApi(): CheckpointApi {
    const { apiUrl, apiKey, requestTimeoutMs } = this.connectionConfig;
    return new CheckpointApi({ apiUrl, apiKey, requestTimeoutMs });
  }

  /** Checkpoint the sandbox's files (copy-on-write; processes and memory are not kept). */
  checkpoint(label?: string, opts?: CallOptions): Promise<CheckpointInfo> {
    return this.checkpointApi.create(this.sandboxId, label, opts);
  }

  /** The sandbox's checkpoint tree, and which checkpoint its current files descend from. */
  checkpoints(opts?: CallOptions): Promise<CheckpointTree> {
    return this.checkpointApi.tree(this.sandboxId, opts);
  }

  /**
   * Restore the sandbox in place to a checkpoint of its tree: same id, token and address, the checkpoint's files;
   * its processes restart (open command streams end). Resolves once envd answers again.
   */
  rollback(checkpointId: string, opts?: CallOptions): Promise<void> {
    return this.checkpointApi.rollback(this.sandboxId, checkpointId, opts);
  }

  /** Delete a checkpoint; with `cascade`, the checkpoints descending from it too (without, those make it fail: 409). */
  deleteCheckpoint(checkpointId: string, opts?: CallOptions & { cascade?: boolean }): Promise<string[]> {
    return this.checkpointApi.delete(checkpointId, opts);
  }
}
