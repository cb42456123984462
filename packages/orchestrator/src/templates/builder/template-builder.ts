// Template builds: accepts the SDK's build requests, runs them in the background step by step (run-build.ts: RUN in
// build sandboxes, COPY on the host, state steps in memory), caches every step as a content-addressed layer, and
// publishes the template only at the end by writing its manifest atomically (manifest-updates.ts). This class is
// the facade the template API and the orchestrator use; the builds it knows are in build-registry.ts, uploads in
// build-uploads.ts, layer garbage collection in layer-collector.ts, and its answers in E2B's shapes in build-views.ts.
import { join } from "node:path";
import type { Readable } from "node:stream";
import { Code, type BuildStatusPage, type RequestedBuild, type TemplateSummary, type TemplateWithBuilds } from "@burrow/protocol";
import type { OrchestratorConfig } from "../../config.js";
import type { Logger } from "../../logger.js";
import type { SandboxHost } from "../../sandbox-host.js";
import type { TemplateManifest, TemplateStore } from "../template-store.js";
import type { BuildLogEntry } from "./build-log.js";
import { BuildRegistry, type BuildCounters, type RequestBuildInput } from "./build-registry.js";
import { parseBuildSpec, type BuildSpec } from "./build-spec.js";
import { BuildUploads } from "./build-uploads.js";
import {
  buildStatusPage,
  requestedBuild,
  templateSummaries,
  templateTags,
  templateWithBuilds,
} from "./build-views.js";
import { LayerCollector } from "./layer-collector.js";
import { ManifestUpdates, requireTemplate } from "./manifest-updates.js";
import { runBuild } from "./run-build.js";
import { TemplateBuildError } from "./template-build-error.js";

export interface TemplateBuilderDeps {
  store: TemplateStore;
  host: SandboxHost;
  config: Readonly<OrchestratorConfig>;
  logger: Logger;
  /** Whether a sandbox of this template still runs; deleted templates keep their layers until none does. */
  isTemplateInUse?: ((templateId: string) => boolean) | undefined;
}

export class TemplateBuilder {
  private readonly registry: BuildRegistry;
  private readonly uploads: BuildUploads;
  private readonly manifests: ManifestUpdates;
  private readonly layers: LayerCollector;

  constructor(private readonly deps: TemplateBuilderDeps) {
    const { store, config, logger } = deps;
    const root = join(config.stateDir, "builds");
    this.registry = new BuildRegistry(store, config.defaultLimits);
    this.uploads = new BuildUploads({ root: join(root, "uploads"), limits: config.uploads, store, registry: this.registry, logger });
    this.manifests = new ManifestUpdates(store);
    this.layers = new LayerCollector({
      store,
      registry: this.registry,
      deletedDir: join(root, "deleted"),
      isTemplateInUse: deps.isTemplateInUse,
      logger,
    });
  }

  /** The manifests and layers it builds into: a node of a cluster publishes and fetches them (server/src/cluster). */
  get store(): TemplateStore {
    return this.deps.store;
  }

  /** POST /v3/templates: reserve a build of `name` (reusing the template id when the name exists). */
  requestBuild(input: RequestBuildInput): RequestedBuild {
    return requestedBuild(this.registry.reserve(input));
  }

  /** Is the COPY context with this files hash already uploaded for this template? */
  hasFiles(templateId: string, hash: string): Promise<boolean> {
    return this.uploads.has(templateId, hash);
  }

  /** Largest upload accepted, in bytes. */
  get maxUploadBytes(): number {
    return this.uploads.maxBytes;
  }

  /**
   * Store an uploaded COPY context (tar or tar.gz) of a template, once: a present upload is never replaced
   * (already_exists). Too large or too many: resource_exhausted.
   */
  acceptUpload(
    templateId: string,
    hash: string,
    body: Readable,
    opts: { contentLength?: number | undefined; signal?: AbortSignal | undefined } = {},
  ): Promise<void> {
    return this.uploads.accept(templateId, hash, body, opts);
  }

  /** POST /v2/templates/{id}/builds/{buildId}: validate the request and run it in the background. */
  startBuild(templateId: string, buildId: string, body: unknown): void {
    const record = this.registry.require(templateId, buildId);
    if (record.status !== "waiting") {
      throw new TemplateBuildError(Code.FailedPrecondition, `build ${buildId} was already started`);
    }
    const spec = parseBuildSpec(body);
    for (const step of spec.steps) if (step.type === "COPY" && step.filesHash) record.uploads.add(`${templateId}/${step.filesHash}`);
    record.status = "building";
    const { store, host, config, logger } = this.deps;
    const runDeps = { store, host, config, logger, uploads: this.uploads, manifests: this.manifests };
    // A collection in progress finishes first: it must not remove a layer this build is about to reuse.
    record.done = this.layers.idle
      .then(() => runBuild(runDeps, record, spec))
      .finally(() => {
        this.layers.buildEnded();
        this.registry.buildEnded(record);
      });
  }

  status(templateId: string, buildId: string, logsOffset = 0): BuildStatusPage {
    return buildStatusPage(this.registry.require(templateId, buildId), logsOffset);
  }

  /**
   * Resolves when the build ends (whatever the outcome); for callers that start a build and then wait for it
   * without polling. A build that was requested but never started has nothing to wait for: failed_precondition
   * (waiting for it could last forever). The signal stops the waiting, not the build.
   */
  async waitForBuild(buildId: string, signal?: AbortSignal): Promise<BuildStatusPage & { counters: BuildCounters }> {
    const record = this.registry.get(buildId);
    if (!record) throw new TemplateBuildError(Code.NotFound, `build ${buildId} not found`);
    const { done } = record;
    if (!done) throw new TemplateBuildError(Code.FailedPrecondition, `build ${buildId} has not been started`);
    await settledOrAborted(done, signal);
    return { ...this.status(record.templateId, buildId, 0), counters: { ...record.counters } };
  }

  /** Subscribe to a build's log as it is written (CLI-less callers, e.g. building shipped definitions). */
  onBuildLog(buildId: string, listener: (entry: BuildLogEntry) => void): () => void {
    const record = this.registry.get(buildId);
    if (!record) throw new TemplateBuildError(Code.NotFound, `build ${buildId} not found`);
    return record.log.onEntry(listener);
  }

  /** Build `spec` as `name` and wait for it: for definitions shipped with Burrow. */
  async buildAndWait(
    name: string,
    spec: BuildSpec,
    opts: { onLog?: (entry: BuildLogEntry) => void; signal?: AbortSignal; memoryMB?: number } = {},
  ): Promise<TemplateManifest> {
    opts.signal?.throwIfAborted();
    const requested = this.requestBuild({ name, memoryMB: opts.memoryMB });
    const unsubscribe = opts.onLog ? this.onBuildLog(requested.buildID, opts.onLog) : () => undefined;
    const onAbort = () => this.registry.get(requested.buildID)?.controller.abort(opts.signal?.reason);
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      this.startBuild(requested.templateID, requested.buildID, spec);
      const result = await this.waitForBuild(requested.buildID);
      if (result.status !== "ready") {
        throw new TemplateBuildError(Code.FailedPrecondition, `building ${name} failed: ${result.reason?.message ?? "unknown error"}`, {
          step: result.reason?.step,
        });
      }
      const manifest = this.deps.store.get(requested.templateID);
      if (!manifest) throw new TemplateBuildError(Code.Internal, `template ${name} vanished after its build`);
      return manifest;
    } finally {
      unsubscribe();
      opts.signal?.removeEventListener("abort", onAbort);
    }
  }

  counters(buildId: string): BuildCounters | undefined {
    const record = this.registry.get(buildId);
    return record ? { ...record.counters } : undefined;
  }

  list(): TemplateSummary[] {
    return templateSummaries(this.deps.store.list());
  }

  /** Tags of a template: `[{tag, buildID, createdAt}]`. */
  tagsOf(templateRef: string): { tag: string; buildID: string; createdAt: string }[] {
    return templateTags(requireTemplate(this.deps.store, templateRef));
  }

  /**
   * A template (id or name) and every build of it: the published ones and those this process still knows
   * (waiting, building, failed), newest first. A template whose first build has not finished is listed too; a
   * deleted one is not found, whatever builds of it this process remembers.
   */
  templateBuilds(templateRef: string): TemplateWithBuilds {
    const manifest = this.deps.store.resolve(templateRef);
    const found = templateWithBuilds(manifest, this.registry.buildsOf(manifest, templateRef), this.deps.config.defaultLimits);
    if (!found) throw new TemplateBuildError(Code.NotFound, `template '${templateRef}' not found`);
    return found;
  }

  /** POST /templates/tags: point `tags` at the build `target` (`name:tag`) names. */
  assignTags(target: string, tags: string[]): Promise<{ buildID: string; tags: string[] }> {
    return this.manifests.assignTags(target, tags);
  }

  /** DELETE /templates/tags. */
  removeTags(name: string, tags: string[]): Promise<void> {
    return this.manifests.removeTags(name, tags);
  }

  /** DELETE /templates/{id}: unpublish now; layers go at the next garbage collection no sandbox needs them. */
  deleteTemplate(templateRef: string): Promise<boolean> {
    return this.layers.deleteTemplate(templateRef);
  }

  /** Collect garbage now, or once the builds running now have ended; failures are logged (LayerCollector.request). */
  requestGarbageCollection(): Promise<void> {
    return this.layers.request();
  }

  /** A sandbox ended: layers of deleted templates it kept alive may be free now. */
  sandboxEnded(): Promise<void> {
    return this.layers.sandboxEnded();
  }

  /** Remove layers nothing references and temporary directories of builds that no longer run (LayerCollector.collect). */
  collectGarbage(extraReferenced: Iterable<string> = []): Promise<{ removedLayers: string[] }> {
    return this.layers.collect(extraReferenced);
  }

  /** Cancel running builds and wait for them to wind down (their sandboxes are destroyed). */
  async close(): Promise<void> {
    this.uploads.close();
    const running = this.registry.building();
    for (const record of running) record.controller.abort(new Error("builder closing"));
    await Promise.allSettled(running.map((b) => b.done));
  }
}

/**
 * Wait for `done` (a build's run, which never rejects) unless `signal` aborts first. The abort listener goes as soon
 * as either happens, so a long-lived signal used for many waits does not collect listeners.
 */
async function settledOrAborted(done: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return done;
  signal.throwIfAborted();
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    await Promise.race([done, aborted]);
  } finally {
    if (onAbort) signal.removeEventListener("abort", onAbort);
  }
}
