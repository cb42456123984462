// What the builder answers in the field names of E2B's template REST API (buildID, templateID, logEntries, …): a
// build's status with a page of its log, the template list, a template with its builds, a template's tags. The
// shapes are @burrow/protocol's; the server's template routes send them as they are.
import type {
  BuildStatusPage,
  RequestedBuild,
  TemplateBuildSummary,
  TemplateSummary,
  TemplateTag,
  TemplateWithBuilds,
} from "@burrow/protocol";
import type { SandboxLimits } from "../../types.js";
import { wireBuildId } from "../build-ids.js";
import type { TemplateManifest } from "../template-store.js";
import { LOG_PAGE_SIZE } from "./build-log.js";
import type { BuildRecord } from "./build-registry.js";

export function requestedBuild(record: BuildRecord): RequestedBuild {
  return { templateID: record.templateId, buildID: record.buildId, names: [record.name], tags: record.tags, aliases: [record.name], public: false };
}

/** The build's status with the page of its log from `logsOffset`. */
export function buildStatusPage(record: BuildRecord, logsOffset: number): BuildStatusPage {
  return {
    buildID: wireBuildId(record.buildId),
    templateID: record.templateId,
    status: record.status,
    logEntries: record.log.page(Math.max(0, Math.floor(logsOffset)), LOG_PAGE_SIZE),
    logs: [],
    ...(record.reason ? { reason: record.reason } : {}),
  };
}

/** Published templates (every one is ready: a build publishes only when it succeeds). */
export function templateSummaries(manifests: TemplateManifest[]): TemplateSummary[] {
  return manifests.map((m) => ({
    templateId: m.templateId,
    aliases: [...m.aliases],
    buildId: m.buildId !== undefined ? wireBuildId(m.buildId) : undefined,
    tags: Object.keys(m.tags ?? {}),
    createdAt: m.createdAt,
    cpuCount: m.defaults.cpuCount,
    memoryMB: m.defaults.memoryMB,
    buildStatus: "ready" as const,
  }));
}

/** Tags of a template: `[{tag, buildID, createdAt}]`. */
export function templateTags(manifest: TemplateManifest): TemplateTag[] {
  return Object.entries(manifest.tags ?? {}).map(([tag, buildID]) => ({
    tag,
    buildID: wireBuildId(buildID),
    createdAt: manifest.builds?.[buildID]?.createdAt ?? manifest.createdAt,
  }));
}

/**
 * A template and its builds: those published in `manifest` and `records` (this process's, which know more: the
 * request time, and builds never published), newest first. Undefined when neither names a template.
 */
export function templateWithBuilds(
  manifest: TemplateManifest | undefined,
  records: BuildRecord[],
  defaultLimits: SandboxLimits,
): TemplateWithBuilds | undefined {
  const templateId = manifest?.templateId ?? records[0]?.templateId;
  if (templateId === undefined) return undefined;
  const summaries = new Map<string, TemplateBuildSummary>();
  for (const [buildId, entry] of Object.entries(manifest?.builds ?? {})) {
    const limits = entry.limits ?? manifest?.defaults ?? defaultLimits;
    summaries.set(buildId, {
      buildID: wireBuildId(buildId),
      status: "ready",
      createdAt: entry.createdAt,
      updatedAt: entry.createdAt,
      finishedAt: entry.createdAt,
      cpuCount: limits.cpuCount,
      memoryMB: limits.memoryMB,
    });
  }
  for (const record of records) {
    summaries.set(record.buildId, {
      buildID: wireBuildId(record.buildId),
      status: record.status,
      createdAt: record.createdAt,
      updatedAt: record.finishedAt ?? record.createdAt,
      ...(record.finishedAt !== undefined ? { finishedAt: record.finishedAt } : {}),
      cpuCount: record.limits.cpuCount,
      memoryMB: record.limits.memoryMB,
    });
  }
  const builds = [...summaries.values()].sort(newestFirst);
  const aliases = manifest ? [...manifest.aliases] : [...new Set(records.map((r) => r.name))];
  const createdAt = manifest?.createdAt ?? builds[builds.length - 1]?.createdAt ?? new Date().toISOString();
  return { templateID: templateId, aliases, names: aliases, createdAt, updatedAt: builds[0]?.updatedAt ?? createdAt, builds };
}

/** Newest build first; builds created at the same instant by id, so the order is total (a cursor can follow it). */
export function newestFirst(a: TemplateBuildSummary, b: TemplateBuildSummary): number {
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? 1 : -1;
  return a.buildID < b.buildID ? 1 : a.buildID > b.buildID ? -1 : 0;
}
