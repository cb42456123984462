// Branching: new sandboxes started from a checkpoint, each on the layers its sandbox ran on with a writable snapshot
// of the checkpoint's files as its own directory (so a child's own checkpoints are again single snapshots, however
// deep the tree grows). Children are fresh launches (a pooled sandbox already has a directory of its own), claimed
// like any created sandbox: their own envd token and env vars, the template's start command. Each child succeeds
// or fails on its own. `createSandbox({ template: checkpointId })` is one child.
import { BurrowError, Code } from "@burrow/protocol";
import { claim, type CreateSandboxDeps } from "../create-sandbox.js";
import { toRecord } from "../live-sandboxes.js";
import { copyEgressRules } from "../network/egress-rules.js";
import type { BranchCheckpointOptions, CreateSandboxOptions, ForkResult, SandboxRecord } from "../orchestrator-api.js";
import { sandboxLimits } from "../sandbox-limits.js";
import { shareSignal } from "../shared-signal.js";
import type { SandboxStorage } from "../storage/disk-storage.js";
import { removeTree } from "../storage/remove-tree.js";
import type { TemplateManifest } from "../templates/template-store.js";
import type { CheckpointRecordFile } from "./checkpoint-record.js";
import type { CheckpointStore } from "./checkpoint-store.js";
import { writableCopy } from "./writable-copy.js";

/** Most children one branch request may ask for (as many as one fork request). */
export const MAX_BRANCH_CHILDREN = 20;

export interface BranchDeps {
  store: CheckpointStore;
  storage: SandboxStorage;
  /** What a create claims a sandbox with (host, pools, live sandboxes). */
  create: CreateSandboxDeps;
}

export async function branchCheckpoint(deps: BranchDeps, checkpointId: string, opts: BranchCheckpointOptions): Promise<ForkResult[] | undefined> {
  const { count } = opts;
  if (!Number.isInteger(count) || count < 1 || count > MAX_BRANCH_CHILDREN) {
    throw new BurrowError(Code.InvalidArgument, `count must be an integer between 1 and ${MAX_BRANCH_CHILDREN}, got ${String(count)}`, {
      reason: "invalid_branch_count",
    });
  }
  const checkpoint = deps.store.get(checkpointId);
  if (!checkpoint) return undefined;
  const shared = shareSignal(opts.signal);
  const settled = await Promise.allSettled(
    Array.from({ length: count }, (_, index) => {
      const child = opts.forkOptions(index);
      return startChild(deps, checkpoint, {
        template: checkpointId,
        allowInternetAccess: checkpoint.allowInternetAccess,
        envVars: child.envVars,
        envdAccessToken: child.envdAccessToken,
        ...(shared.signal ? { signal: shared.signal } : {}),
      });
    }),
  ).finally(() => shared.release());
  return settled.map((result): ForkResult =>
    result.status === "fulfilled"
      ? { sandbox: result.value }
      : { error: result.reason instanceof Error ? result.reason : new Error(String(result.reason)) },
  );
}

/** One child of a checkpoint, created as `opts` says (its template being the checkpoint). */
export async function startChild(deps: BranchDeps, checkpoint: CheckpointRecordFile, opts: CreateSandboxOptions): Promise<SandboxRecord> {
  const { store, storage, create } = deps;
  // The layers the checkpoint's files belong on, whatever the template has become since.
  const template: TemplateManifest = {
    templateId: checkpoint.templateId,
    aliases: [],
    layers: [...checkpoint.layers],
    defaults: { ...checkpoint.limits },
    createdAt: checkpoint.createdAt,
    ...(checkpoint.runtime ? { runtime: checkpoint.runtime } : {}),
  };
  const limits = sandboxLimits(template.defaults, opts.limits ?? {});
  const copy = await writableCopy(storage, store, checkpoint.checkpointId, opts.signal);
  let sandbox;
  try {
    sandbox = await create.host.launch(template, limits, {
      allowInternetAccess: opts.allowInternetAccess,
      pooled: false,
      writableDir: copy,
      volumes: opts.volumeMounts,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
  } finally {
    // Moved into place by a launch that got that far; otherwise still here.
    await removeTree(copy).catch(() => undefined);
  }
  try {
    // Without rules of its own a child is restricted as its checkpoint's sandbox was.
    const egress = opts.egress ?? checkpoint.egress;
    await claim(create, sandbox, template, limits, egress ? { ...opts, egress: copyEgressRules(egress) } : opts);
  } catch (error) {
    await create.host.destroy(sandbox).catch(() => undefined);
    throw error;
  }
  create.live.add(sandbox, { layers: [...template.layers], runtime: template.runtime, envVars: { ...opts.envVars } });
  // Unless the checkpoint was deleted meanwhile (then the child descends from nothing kept).
  await store.exclusive(async () => {
    if (store.get(checkpoint.checkpointId)) await store.setHead(sandbox.record.sandboxId, checkpoint.checkpointId);
  });
  return toRecord(sandbox);
}
