// Snapshots are charged to their owner: the team of the key that created the sandbox, named by the team's anchor key
// (its oldest key, TeamStore.teamAnchorKey), so that every key of a team shares one quota; the owner is an opaque
// string so that the orchestrator never needs to know what a team is. The orchestrator measures and enforces (it
// knows the bytes); the limits are the control plane's. Snapshots charged before teams to a key that is not its
// team's anchor stay charged to that key alone.
import { SNAPSHOT_REFUSALS, type SnapshotQuota } from "@burrow/orchestrator";
import { BurrowError } from "@burrow/protocol";
import type { AdmissionConfig } from "../config.js";

/**
 * The owner a sandbox's snapshots are charged to: `anchorOf` maps the sandbox's key to its team's anchor key (without
 * it, or for an unknown key, the key itself). Sandboxes without a key (older rows) share one owner.
 */
export function snapshotOwner(apiKeyId: number | null, anchorOf?: (keyId: number) => number | undefined): string {
  return apiKeyId === null ? "key:none" : `key:${anchorOf?.(apiKeyId) ?? apiKeyId}`;
}

export function snapshotQuota(config: AdmissionConfig, owner: string): SnapshotQuota {
  return { owner, maxBytes: config.snapshotQuotaMB * 2 ** 20, maxPerSandbox: config.maxSnapshotsPerSandbox };
}

/**
 * The reason of a snapshot the orchestrator refused for its owner's quota, if it is one. Over the owner's bytes is
 * 507 (errors.ts: only deleting snapshots helps), over the count of one sandbox 429.
 */
export function snapshotRefusal(err: unknown): typeof SNAPSHOT_REFUSALS.storage | typeof SNAPSHOT_REFUSALS.count | undefined {
  if (!(err instanceof BurrowError)) return undefined;
  return err.reason === SNAPSHOT_REFUSALS.storage || err.reason === SNAPSHOT_REFUSALS.count ? err.reason : undefined;
}
