// The builds this process knows: requested, running and recently finished ones (the newest finished are kept for
// their status and logs), and the names reserved by first builds that have not published their template yet.
import { Code, type BuildStatus, type BuildStatusReason } from "@burrow/protocol";
import { randomId } from "../../ids.js";
import type { SandboxLimits } from "../../types.js";
import { isUuid, newBuildId } from "../build-ids.js";
import type { TemplateManifest, TemplateStore } from "../template-store.js";
import { BuildLog } from "./build-log.js";
import { TemplateBuildError } from "./template-build-error.js";
import { checkTag, DEFAULT_TAG, parseTemplateName } from "./template-names.js";

export type { BuildStatus, BuildStatusReason } from "@burrow/protocol";

/** What a build did, for tests and benchmarks. */
export interface BuildCounters {
  stepsRun: number;
  stepsCached: number;
}

export interface RequestBuildInput {
  /** `name` or `name:tag`. */
  name: string;
  tags?: string[] | undefined;
  cpuCount?: number | undefined;
  memoryMB?: number | undefined;
}

export interface BuildRecord {
  buildId: string;
  templateId: string;
  name: string;
  tags: string[];
  limits: SandboxLimits;
  status: BuildStatus;
  log: BuildLog;
  reason?: BuildStatusReason;
  counters: BuildCounters;
  controller: AbortController;
  done?: Promise<void>;
  /** Layers this build stacks on or produced; garbage collection keeps them. */
  layers: Set<string>;
  tmpDirs: Set<string>;
  /** Uploads (`<templateId>/<filesHash>`) its COPY steps use; upload collection keeps them. */
  uploads: Set<string>;
  createdAt: string;
  finishedAt?: string;
}

const FINISHED_BUILDS_KEPT = 200;

export class BuildRegistry {
  private readonly builds = new Map<string, BuildRecord>();
  /** Names of templates whose first build has not finished: the id is reserved but nothing is published. */
  private readonly pendingNames = new Map<string, string>();

  constructor(
    private readonly store: TemplateStore,
    private readonly defaultLimits: SandboxLimits,
  ) {}

  /** A new waiting build of `input.name`, under the template id the name has (or has reserved) when it has one. */
  reserve(input: RequestBuildInput): BuildRecord {
    const { name, tag } = parseTemplateName(input.name);
    const tags = [...new Set([...(tag !== undefined ? [checkTag(tag)] : []), ...(input.tags ?? []).map(checkTag)])];
    if (tags.length === 0) tags.push(DEFAULT_TAG);
    const existing = this.store.resolve(name);
    const templateId = existing?.templateId ?? this.pendingNames.get(name) ?? randomId();
    if (!existing) this.pendingNames.set(name, templateId);
    const defaults = existing?.defaults ?? this.defaultLimits;
    const limits: SandboxLimits = {
      ...defaults,
      ...(input.cpuCount !== undefined ? { cpuCount: input.cpuCount } : {}),
      ...(input.memoryMB !== undefined ? { memoryMB: input.memoryMB } : {}),
    };
    const record: BuildRecord = {
      buildId: newBuildId(),
      templateId,
      name,
      tags,
      limits,
      status: "waiting",
      log: new BuildLog(),
      counters: { stepsRun: 0, stepsCached: 0 },
      controller: new AbortController(),
      layers: new Set(),
      tmpDirs: new Set(),
      uploads: new Set(),
      createdAt: new Date().toISOString(),
    };
    this.builds.set(record.buildId, record);
    this.trimFinished();
    return record;
  }

  /** The build `buildId` names; a UUID in any letter case (canonical ids are lowercase). */
  get(buildId: string): BuildRecord | undefined {
    return this.builds.get(isUuid(buildId) ? buildId.toLowerCase() : buildId);
  }

  /** The build, which must be of this template: not_found otherwise. */
  require(templateId: string, buildId: string): BuildRecord {
    const record = this.get(buildId);
    if (!record || record.templateId !== templateId) {
      throw new TemplateBuildError(Code.NotFound, `build ${buildId} of template ${templateId} not found`);
    }
    return record;
  }

  /** Whether any build of this template is known. */
  hasTemplate(templateId: string): boolean {
    for (const record of this.builds.values()) if (record.templateId === templateId) return true;
    return false;
  }

  /** Builds waiting to start or running: what they use must stay. */
  unfinished(): BuildRecord[] {
    return [...this.builds.values()].filter((b) => b.status === "building" || b.status === "waiting");
  }

  building(): BuildRecord[] {
    return [...this.builds.values()].filter((b) => b.status === "building");
  }

  /**
   * The builds of a template: of the published `manifest`, or, when none is, of a first build still pending under
   * `templateRef` (its id or name).
   */
  buildsOf(manifest: TemplateManifest | undefined, templateRef: string): BuildRecord[] {
    const pending = new Set(this.pendingNames.values());
    return [...this.builds.values()].filter((r) =>
      manifest ? r.templateId === manifest.templateId : pending.has(r.templateId) && (r.templateId === templateRef || r.name === templateRef),
    );
  }

  /** A build ended: its name stays reserved only while its template is unpublished and another build of it waits. */
  buildEnded(record: BuildRecord): void {
    if (this.pendingNames.get(record.name) === record.templateId && this.store.get(record.templateId) === undefined) {
      // A failed first build publishes nothing; the name is free again once no other build of it waits.
      const other = [...this.builds.values()].some((b) => b.name === record.name && b !== record && (b.status === "waiting" || b.status === "building"));
      if (!other) this.pendingNames.delete(record.name);
    } else if (this.store.get(record.templateId)) {
      this.pendingNames.delete(record.name);
    }
  }

  private trimFinished(): void {
    const finished = [...this.builds.values()].filter((b) => b.status === "ready" || b.status === "error");
    for (const record of finished.slice(0, Math.max(0, finished.length - FINISHED_BUILDS_KEPT))) this.builds.delete(record.buildId);
  }
}
