// Snapshot storage charged to owners. Snapshots are written outside the sandbox's own disk quota (they are layers,
// not part of the sandbox's subvolume), so without a charge a key could grow the host's disk without bound. Each
// charged snapshot's manifest records its owner and the bytes its layer holds; deleting the snapshot (its
// manifest) frees the charge at once, whenever garbage collection removes the layer.
//
// Bytes are what `du` counts: blocks allocated per file. A snapshot's files share their extents with the sandbox
// by reflink until either side rewrites them, and du counts shared extents in full, so the charge is an upper
// bound of what the snapshot adds to the disk, and exactly what it keeps alive once the sandbox has moved on.
//
// Checkpoints (checkpoints/) are charged to the same quota by the bytes only they hold, measured when listed or
// taken; they count in an owner's bytes, not in their number of snapshots.
//
// A fork's hidden snapshot stops being a template as soon as its forks have started, but its layer stays while
// they run: its charge moves to a small ledger in the state directory and ends when the last of those forks does.
import { readFile, rename, writeFile } from "node:fs/promises";
import { BurrowError, Code } from "@burrow/protocol";
import type { SnapshotQuota, SnapshotUsage } from "../orchestrator-api.js";
import type { TemplateManifest } from "../templates/template-store.js";

/**
 * The reasons of a refused snapshot (ResourceExhausted): over the owner's bytes, or over the number of snapshots
 * kept from one sandbox.
 */
export const SNAPSHOT_REFUSALS = { storage: "snapshot_storage", count: "snapshot_count" } as const;

/** The fields a charged snapshot's manifest carries (see SnapshotManifest). */
interface ChargedFields {
  snapshotOf?: string;
  forkOf?: string;
  owner?: string;
  sizeBytes?: number;
}

interface ForkBaseCharge {
  templateId: string;
  owner: string;
  sizeBytes: number;
}

/** Bytes held for a snapshot being copied, so that concurrent snapshots of one owner cannot overshoot together. */
export interface SnapshotReservation {
  readonly owner: string;
  bytes: number;
}

export function formatMiB(bytes: number): string {
  const mib = bytes / 2 ** 20;
  return `${mib >= 100 ? Math.round(mib) : Math.round(mib * 10) / 10} MiB`;
}

export class SnapshotCharges {
  private readonly reservations = new Set<SnapshotReservation>();
  private forkBases: ForkBaseCharge[] = [];
  private writes: Promise<unknown> = Promise.resolve();
  /** Bytes charged by other stores than snapshots (checkpoints), counted against the same quota. */
  private others: () => readonly { owner: string; bytes: number }[] = () => [];

  constructor(private readonly ledgerFile: string) {}

  /** Count what `source` charges per owner (checkpoints' last measured bytes) with the snapshots. */
  chargeAlso(source: () => readonly { owner: string; bytes: number }[]): void {
    this.others = source;
  }

  async load(): Promise<void> {
    try {
      const parsed = JSON.parse(await readFile(this.ledgerFile, "utf8")) as unknown;
      this.forkBases = Array.isArray(parsed) ? (parsed as ForkBaseCharge[]).filter(isForkBaseCharge) : [];
    } catch {
      this.forkBases = [];
    }
  }

  /** Bytes and snapshots charged per owner: charged manifests, fork bases still in use, copies under way. */
  usage(manifests: readonly TemplateManifest[]): SnapshotUsage[] {
    const byOwner = new Map<string, SnapshotUsage>();
    const add = (owner: string, bytes: number, snapshots: number) => {
      const entry = byOwner.get(owner) ?? { owner, bytes: 0, snapshots: 0 };
      entry.bytes += bytes;
      entry.snapshots += snapshots;
      byOwner.set(owner, entry);
    };
    const seen = new Set<string>();
    for (const manifest of manifests) {
      const { owner, sizeBytes } = manifest as TemplateManifest & ChargedFields;
      if (owner === undefined || typeof sizeBytes !== "number") continue;
      seen.add(manifest.templateId);
      add(owner, sizeBytes, 1);
    }
    for (const base of this.forkBases) if (!seen.has(base.templateId)) add(base.owner, base.sizeBytes, 1);
    for (const other of this.others()) add(other.owner, other.bytes, 0);
    for (const reservation of this.reservations) add(reservation.owner, reservation.bytes, 0);
    return [...byOwner.values()];
  }

  /** Refuse when a snapshot of one sandbox would exceed the per-sandbox count (fork bases do not count). */
  checkCount(manifests: readonly TemplateManifest[], sandboxId: string, quota: SnapshotQuota): void {
    const kept = manifests.filter((m) => {
      const fields = m as TemplateManifest & ChargedFields;
      return fields.snapshotOf === sandboxId && fields.forkOf === undefined;
    }).length;
    if (kept >= quota.maxPerSandbox) {
      throw new BurrowError(
        Code.ResourceExhausted,
        `snapshots per sandbox: sandbox ${sandboxId} has ${kept} snapshots, the limit is ${quota.maxPerSandbox}; delete one to take another`,
        { reason: SNAPSHOT_REFUSALS.count },
      );
    }
  }

  /**
   * Hold `bytes` (the sandbox's writable layer as it is now) for a snapshot about to be copied, or refuse when the
   * owner's usage plus them would exceed the quota. Release it with release() once the manifest is saved or the
   * snapshot failed.
   */
  reserve(manifests: readonly TemplateManifest[], quota: SnapshotQuota, bytes: number): SnapshotReservation {
    this.checkBytes(manifests, quota, bytes, undefined, "for this snapshot");
    const reservation: SnapshotReservation = { owner: quota.owner, bytes };
    this.reservations.add(reservation);
    return reservation;
  }

  /** The copy is done: charge what it really holds, or refuse (the caller removes the copy). */
  settle(manifests: readonly TemplateManifest[], quota: SnapshotQuota, reservation: SnapshotReservation, bytes: number): void {
    this.checkBytes(manifests, quota, bytes, reservation, "copied for this snapshot");
    reservation.bytes = bytes;
  }

  release(reservation: SnapshotReservation): void {
    this.reservations.delete(reservation);
  }

  /** A fork's hidden snapshot outlives its manifest while forks run: keep charging it until they have ended. */
  async chargeForkBase(templateId: string, owner: string, sizeBytes: number): Promise<void> {
    this.forkBases = [...this.forkBases.filter((b) => b.templateId !== templateId), { templateId, owner, sizeBytes }];
    await this.persist();
  }

  /** End the charges of fork bases no sandbox runs on any more. */
  async releaseForkBases(inUse: (templateId: string) => boolean): Promise<void> {
    const kept = this.forkBases.filter((b) => inUse(b.templateId));
    if (kept.length === this.forkBases.length) return;
    this.forkBases = kept;
    await this.persist();
  }

  private checkBytes(
    manifests: readonly TemplateManifest[],
    quota: SnapshotQuota,
    bytes: number,
    own: SnapshotReservation | undefined,
    what: string,
  ): void {
    const current = this.usage(manifests).find((u) => u.owner === quota.owner)?.bytes ?? 0;
    const used = current - (own?.bytes ?? 0);
    if (used + bytes > quota.maxBytes) {
      throw new BurrowError(
        Code.ResourceExhausted,
        `snapshot storage quota of ${quota.owner}: ${formatMiB(used)} used + ${formatMiB(bytes)} ${what} exceeds the ` +
          `${formatMiB(quota.maxBytes)} limit; delete snapshots to free space`,
        { reason: SNAPSHOT_REFUSALS.storage },
      );
    }
  }

  /** Writes one at a time, each the whole ledger (it holds one line per running fork family). */
  private persist(): Promise<void> {
    const write = this.writes.then(async () => {
      await writeFile(`${this.ledgerFile}.tmp`, JSON.stringify(this.forkBases));
      await rename(`${this.ledgerFile}.tmp`, this.ledgerFile);
    });
    this.writes = write.catch(() => undefined);
    return write;
  }
}

function isForkBaseCharge(value: unknown): value is ForkBaseCharge {
  const v = value as Partial<ForkBaseCharge> | null;
  return typeof v?.templateId === "string" && typeof v.owner === "string" && typeof v.sizeBytes === "number";
}
