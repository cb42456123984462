// What the template routes need from the orchestrator's TemplateBuilder, structurally, so the API layer does not
// depend on the builder's internals (and a remote orchestrator could implement it too). The answers are E2B's
// shapes from @burrow/protocol.
import type { Readable } from "node:stream";
import type { BuildStatusPage, RequestedBuild, TemplateSummary, TemplateTag, TemplateWithBuilds } from "@burrow/protocol";

export interface TemplateBuildService {
  requestBuild(input: { name: string; tags?: string[] | undefined; cpuCount?: number | undefined; memoryMB?: number | undefined }): RequestedBuild;
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
  status(templateId: string, buildId: string, logsOffset?: number): BuildStatusPage;
  list(): TemplateSummary[];
  /** A template and its builds, newest first (by createdAt, then buildID); not_found for an unknown template. */
  templateBuilds(templateRef: string): TemplateWithBuilds;
  tagsOf(templateRef: string): TemplateTag[];
  assignTags(target: string, tags: string[]): Promise<{ buildID: string; tags: string[] }>;
  removeTags(name: string, tags: string[]): Promise<void>;
  deleteTemplate(templateRef: string): Promise<boolean>;
}

/** Resolve a template reference the way sandbox creation does (for GET /templates/aliases/{alias}). */
export type ResolveTemplate = (ref: string) => { templateId: string } | undefined;
