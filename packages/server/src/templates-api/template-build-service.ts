// What the template routes need from the orchestrator's TemplateBuilder, structurally, so the API layer does not
// depend on the builder's internals (and a remote orchestrator could implement it too).
import type { Readable } from "node:stream";

export interface BuildLogEntryDto {
  timestamp: string;
  level: "debug" | "info" | "warn" | "error";
  message: string;
  step?: string | undefined;
}

/** One build of a template, in E2B's `TemplateBuild` field names. */
export interface TemplateBuildDto {
  buildID: string;
  status: "waiting" | "building" | "ready" | "error";
  createdAt: string;
  updatedAt: string;
  finishedAt?: string | undefined;
  cpuCount: number;
  memoryMB: number;
}

export interface TemplateBuildService {
  requestBuild(input: { name: string; tags?: string[] | undefined; cpuCount?: number | undefined; memoryMB?: number | undefined }): {
    templateID: string;
    buildID: string;
    names: string[];
    tags: string[];
    aliases: string[];
    public: boolean;
  };
  /** Whether the template has the upload of `hash`; not_found for an unknown template. */
  hasFiles(templateId: string, hash: string): Promise<boolean>;
  /** Largest upload accepted, in bytes (larger ones are answered 413 before being read). */
  readonly maxUploadBytes: number;
  /**
   * Store an upload once: the same bytes again are a no-op, other bytes already_exists; resource_exhausted when
   * too large or too many.
   */
  acceptUpload(
    templateId: string,
    hash: string,
    body: Readable,
    opts?: { contentLength?: number | undefined; signal?: AbortSignal | undefined },
  ): Promise<void>;
  startBuild(templateId: string, buildId: string, body: unknown): void;
  status(
    templateId: string,
    buildId: string,
    logsOffset?: number,
  ): {
    buildID: string;
    templateID: string;
    status: "waiting" | "building" | "ready" | "error";
    logEntries: BuildLogEntryDto[];
    logs: string[];
    reason?: { message: string; step?: string | undefined; logEntries?: BuildLogEntryDto[] } | undefined;
  };
  list(): {
    templateId: string;
    aliases: string[];
    buildId?: string | undefined;
    tags: string[];
    createdAt: string;
    cpuCount: number;
    memoryMB: number;
    buildStatus: string;
  }[];
  /** A template and its builds, newest first (by createdAt, then buildID); not_found for an unknown template. */
  templateBuilds(templateRef: string): {
    templateID: string;
    aliases: string[];
    names: string[];
    createdAt: string;
    updatedAt: string;
    builds: TemplateBuildDto[];
  };
  tagsOf(templateRef: string): { tag: string; buildID: string; createdAt: string }[];
  assignTags(target: string, tags: string[]): Promise<{ buildID: string; tags: string[] }>;
  removeTags(name: string, tags: string[]): Promise<void>;
  deleteTemplate(templateRef: string): Promise<boolean>;
}

/** Resolve a template reference the way sandbox creation does (for GET /templates/aliases/{alias}). */
export type ResolveTemplate = (ref: string) => { templateId: string } | undefined;
