// Admission of template builds: a build runs a sandbox with the template's limits, so those must fit the host,
// and builds are heavy (package installs, layer commits), so only so many run at once; more answer 429.
import { BurrowError, Code } from "@burrow/protocol";
import type { RefusalReason } from "./sandbox-admission.js";

/** What the template routes get from the control plane's admission. */
export interface BuildAdmissionPolicy {
  readonly maxConcurrentBuilds: number;
  /** Throws (400) for limits no sandbox on this host can have. */
  checkSize(limits: { cpuCount?: number | undefined; memoryMB?: number | undefined }): void;
  refused(reason: RefusalReason): void;
}

/** The part of the template builder this needs: whether a build it started still runs. */
interface BuildStatusSource {
  status(templateId: string, buildId: string): { status: string };
}

/** Counts the builds started through the API that still run, and refuses one more beyond the limit. */
export class BuildAdmission {
  readonly #running = new Map<string, string>();

  constructor(
    private readonly builder: BuildStatusSource,
    private readonly policy: BuildAdmissionPolicy | undefined,
  ) {}

  /** POST /v3/templates: the template's limits must fit the host. */
  checkSize(limits: { cpuCount?: number | undefined; memoryMB?: number | undefined }): void {
    this.policy?.checkSize(limits);
  }

  /** Before starting a build: refuse it when the limit of builds at once is reached. */
  admit(): void {
    if (!this.policy) return;
    for (const [buildId, templateId] of this.#running) {
      let status: string;
      try {
        status = this.builder.status(templateId, buildId).status;
      } catch {
        status = "gone";
      }
      if (status !== "building") this.#running.delete(buildId);
    }
    const limit = this.policy.maxConcurrentBuilds;
    if (this.#running.size >= limit) {
      this.policy.refused("builds");
      throw new BurrowError(
        Code.ResourceExhausted,
        `template builds: ${this.#running.size} running, the limit is ${limit}; start this one when another has finished`,
        { reason: "builds" },
      );
    }
  }

  /** After starting a build (same tick as admit, so that two starts cannot both take the last place). */
  started(templateId: string, buildId: string): void {
    if (this.policy) this.#running.set(buildId, templateId);
  }
}
