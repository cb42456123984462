// Prometheus view of admission: refusals by reason, and the snapshot storage each owner is charged for against
// the per-owner limit (so an operator sees who is close to it before they are refused).
import type { SnapshotUsage } from "@burrow/orchestrator";
import { Counter, Gauge, type Registry } from "prom-client";
import type { RefusalReason } from "./sandbox-admission.js";

export interface AdmissionMetrics {
  refused(reason: RefusalReason): void;
}

export function createAdmissionMetrics(
  registry: Registry,
  opts: { snapshotUsage: () => SnapshotUsage[]; snapshotLimitBytes: number },
): AdmissionMetrics {
  const refusals = new Counter({
    name: "burrow_admission_refusals_total",
    help: "Requests refused by admission, by reason (sandbox_size, sandboxes, memory_commit, host_memory, host_disk, builds, snapshot_storage, snapshot_count).",
    labelNames: ["reason"],
    registers: [registry],
  });
  new Gauge({
    name: "burrow_snapshot_storage_bytes",
    help: "Disk space charged to each owner's snapshots (du of their layers; a running fork's hidden snapshot included).",
    labelNames: ["owner"],
    registers: [registry],
    collect() {
      this.reset();
      for (const usage of opts.snapshotUsage()) this.set({ owner: usage.owner }, usage.bytes);
    },
  });
  new Gauge({
    name: "burrow_snapshots",
    help: "Snapshots charged to each owner.",
    labelNames: ["owner"],
    registers: [registry],
    collect() {
      this.reset();
      for (const usage of opts.snapshotUsage()) this.set({ owner: usage.owner }, usage.snapshots);
    },
  });
  new Gauge({
    name: "burrow_snapshot_storage_limit_bytes",
    help: "Snapshot storage each owner may use.",
    registers: [registry],
    collect() {
      this.set(opts.snapshotLimitBytes);
    },
  });
  return { refused: (reason) => refusals.inc({ reason }) };
}
