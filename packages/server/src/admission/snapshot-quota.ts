// Snapshots are charged to their owner: the API key that created the sandbox today, a team once teams exist (the
// owner is an opaque string so that the orchestrator never needs to know which). The orchestrator measures and
// enforces (it knows the bytes); the limits are the control plane's.
import type { SnapshotQuota } from "@burrow/orchestrator";
import type { AdmissionConfig } from "../config.js";
import { Code, ServerError } from "../errors.js";

/** The owner a sandbox's snapshots are charged to. Sandboxes without a key (older rows) share one owner. */
export function snapshotOwner(apiKeyId: number | null): string {
  return apiKeyId === null ? "key:none" : `key:${apiKeyId}`;
}

export function snapshotQuota(config: AdmissionConfig, owner: string): SnapshotQuota {
  return { owner, maxBytes: config.snapshotQuotaMB * 2 ** 20, maxPerSandbox: config.maxSnapshotsPerSandbox };
}

/** Which snapshot limit an orchestrator error reports, if it is a quota refusal. */
export function snapshotRefusal(err: unknown): "storage" | "count" | undefined {
  if (!(err instanceof Error) || (err as { code?: unknown }).code !== "resource_exhausted") return undefined;
  const quota = (err as { quota?: unknown }).quota;
  return quota === "storage" || quota === "count" ? quota : undefined;
}

/** Over the owner's bytes is 507 (insufficient storage: only deleting snapshots helps); over the count stays 429. */
export function fromSnapshotRefusal(err: unknown): unknown {
  const refusal = snapshotRefusal(err);
  if (refusal === "storage") return new ServerError(Code.ResourceExhausted, (err as Error).message, { cause: err, httpStatus: 507 });
  if (refusal === "count") return new ServerError(Code.ResourceExhausted, (err as Error).message, { cause: err });
  return err;
}
