// Template builds: accepts the SDK's build requests, runs them in the background step by step (RUN in build
// sandboxes, COPY on the host, state steps in memory), caches every step as a content-addressed layer, and
// publishes the template only at the end by writing its manifest atomically.
import { createHash, randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, readFile, readdir, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { Code } from "@burrow/protocol";
import type { OrchestratorConfig } from "../../config.js";
import { randomId } from "../../ids.js";
import { isUuid, newBuildId, wireBuildId } from "../build-ids.js";
import type { Logger } from "../../logger.js";
import type { SandboxHost } from "../../sandbox-host.js";
import { removeTree } from "../../storage/remove-tree.js";
import type { SandboxLimits } from "../../types.js";
import { resolveBase } from "../bases/resolve-base.js";
import type { TemplateManifest, TemplateRuntime, TemplateStore } from "../template-store.js";
import { BuildLog, LOG_PAGE_SIZE, type BuildLogEntry, type BuildLogLevel } from "./build-log.js";
import { parseBuildSpec, type BuildSpec, type BuildStep } from "./build-spec.js";
import { applyStateStep, baseKey, expandVars, layerIdForKey, runEnv, stepKey, type BuildState } from "./build-state.js";
import { commitLayerDir, layerExists, makeTmpLayerDir, TMP_LAYER_PREFIX } from "./commit-layer.js";
import { copyCacheKeyInput, runCopyStep } from "./copy-step.js";
import { checkFilesHash } from "./files-hash.js";
import { UploadStore } from "./upload-store.js";
import { runRunStep } from "./run-step.js";
import { checkTag, DEFAULT_TAG, parseTemplateName } from "./template-names.js";
import { TemplateBuildError } from "./template-build-error.js";
import { templateReadyTimeoutMs } from "../start-template-process.js";

export type BuildStatus = "waiting" | "building" | "ready" | "error";

export interface BuildStatusReason {
  message: string;
  step?: string | undefined;
  logEntries?: BuildLogEntry[];
}

/** GET …/builds/{id}/status, in E2B's field names. */
export interface BuildStatusPage {
  buildID: string;
  templateID: string;
  status: BuildStatus;
  logEntries: BuildLogEntry[];
  logs: string[];
  reason?: BuildStatusReason | undefined;
}

export interface RequestBuildInput {
  /** `name` or `name:tag`. */
  name: string;
  tags?: string[] | undefined;
  cpuCount?: number | undefined;
  memoryMB?: number | undefined;
}

export interface RequestedBuild {
  templateID: string;
  buildID: string;
  names: string[];
  tags: string[];
  aliases: string[];
  public: boolean;
}

export interface TemplateSummary {
  templateId: string;
  aliases: string[];
  buildId?: string | undefined;
  tags: string[];
  createdAt: string;
  cpuCount: number;
  memoryMB: number;
  buildStatus: BuildStatus;
}

/** One build in GET /templates/{templateID}, in E2B's field names (`TemplateBuild`). */
export interface TemplateBuildSummary {
  buildID: string;
  status: BuildStatus;
  createdAt: string;
  updatedAt: string;
  finishedAt?: string | undefined;
  cpuCount: number;
  memoryMB: number;
}

/** GET /templates/{templateID}: a template and its builds, newest first (E2B's `TemplateWithBuilds`). */
export interface TemplateWithBuilds {
  templateID: string;
  aliases: string[];
  names: string[];
  createdAt: string;
  updatedAt: string;
  builds: TemplateBuildSummary[];
}

export interface TemplateBuilderDeps {
  store: TemplateStore;
  host: SandboxHost;
  config: Readonly<OrchestratorConfig>;
  logger: Logger;
  /** Whether a sandbox of this template still runs; deleted templates keep their layers until none does. */
  isTemplateInUse?: ((templateId: string) => boolean) | undefined;
}

/** What the last build did, for tests and benchmarks. */
export interface BuildCounters {
  stepsRun: number;
  stepsCached: number;
}

interface BuildRecord {
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

/** Minimum memory for build sandboxes: apt and pip need more than a default sandbox. */
const BUILD_MIN_MEMORY_MB = 1024;
const FINISHED_BUILDS_KEPT = 200;
/** How often uploads no build needs any more are looked for (they go once older than uploads.maxAgeMs). */
const UPLOAD_COLLECTION_INTERVAL_MS = 60 * 60 * 1000;

export class TemplateBuilder {
  private readonly builds = new Map<string, BuildRecord>();
  /** Names of templates whose first build has not finished: the id is reserved but nothing is published. */
  private readonly pendingNames = new Map<string, string>();
  private readonly saveLocks = new Map<string, Promise<unknown>>();
  /** Garbage collections run one at a time; one asked for while builds run waits until none does. */
  private gcChain: Promise<unknown> = Promise.resolve();
  private gcPending = false;
  private readonly uploads: UploadStore;
  private readonly uploadTimer: NodeJS.Timeout;
  private readonly deletedDir: string;

  constructor(private readonly deps: TemplateBuilderDeps) {
    const root = join(deps.config.stateDir, "builds");
    this.uploads = new UploadStore(join(root, "uploads"), deps.config.uploads);
    this.deletedDir = join(root, "deleted");
    // At start (what a previous run left) and then periodically.
    void this.collectUploads();
    this.uploadTimer = setInterval(() => void this.collectUploads(), UPLOAD_COLLECTION_INTERVAL_MS);
    this.uploadTimer.unref();
  }

  /** POST /v3/templates: reserve a build of `name` (reusing the template id when the name exists). */
  requestBuild(input: RequestBuildInput): RequestedBuild {
    const { name, tag } = parseTemplateName(input.name);
    const tags = [...new Set([...(tag !== undefined ? [checkTag(tag)] : []), ...(input.tags ?? []).map(checkTag)])];
    if (tags.length === 0) tags.push(DEFAULT_TAG);
    const existing = this.deps.store.resolve(name);
    const templateId = existing?.templateId ?? this.pendingNames.get(name) ?? randomId();
    if (!existing) this.pendingNames.set(name, templateId);
    const defaults = existing?.defaults ?? this.deps.config.defaultLimits;
    const limits: SandboxLimits = {
      ...defaults,
      ...(input.cpuCount !== undefined ? { cpuCount: input.cpuCount } : {}),
      ...(input.memoryMB !== undefined ? { memoryMB: input.memoryMB } : {}),
    };
    const buildId = newBuildId();
    this.builds.set(buildId, {
      buildId,
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
    });
    this.trimFinished();
    return { templateID: templateId, buildID: buildId, names: [name], tags, aliases: [name], public: false };
  }

  /** Is the COPY context with this files hash already uploaded for this template? */
  async hasFiles(templateId: string, hash: string): Promise<boolean> {
    this.requireKnownTemplate(templateId);
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
  async acceptUpload(
    templateId: string,
    hash: string,
    body: Readable,
    opts: { contentLength?: number | undefined; signal?: AbortSignal | undefined } = {},
  ): Promise<void> {
    this.requireKnownTemplate(templateId);
    try {
      await this.uploads.write(templateId, hash, body, opts);
    } catch (error) {
      // A full store may only hold uploads old enough to go: collect, then try once more (if the body is unread).
      if (!(error instanceof TemplateBuildError && error.code === Code.ResourceExhausted && body.readableDidRead === false)) throw error;
      if ((await this.collectUploads()) === 0) throw error;
      await this.uploads.write(templateId, hash, body, opts);
    }
  }

  /** POST /v2/templates/{id}/builds/{buildId}: validate the request and run it in the background. */
  startBuild(templateId: string, buildId: string, body: unknown): void {
    const record = this.requireBuild(templateId, buildId);
    if (record.status !== "waiting") {
      throw new TemplateBuildError(Code.FailedPrecondition, `build ${buildId} was already started`);
    }
    const spec = parseBuildSpec(body);
    for (const step of spec.steps) if (step.type === "COPY" && step.filesHash) record.uploads.add(`${templateId}/${step.filesHash}`);
    record.status = "building";
    // A collection in progress finishes first: it must not remove a layer this build is about to reuse.
    record.done = this.gcChain.then(() => this.run(record, spec)).finally(() => {
      if (this.gcPending && this.activeBuilds() === 0) void this.requestGarbageCollection();
      if (this.pendingNames.get(record.name) === record.templateId && this.deps.store.get(record.templateId) === undefined) {
        // A failed first build publishes nothing; the name is free again once no other build of it waits.
        const other = [...this.builds.values()].some((b) => b.name === record.name && b !== record && (b.status === "waiting" || b.status === "building"));
        if (!other) this.pendingNames.delete(record.name);
      } else if (this.deps.store.get(record.templateId)) {
        this.pendingNames.delete(record.name);
      }
    });
  }

  status(templateId: string, buildId: string, logsOffset = 0): BuildStatusPage {
    const record = this.requireBuild(templateId, buildId);
    return {
      buildID: wireBuildId(record.buildId),
      templateID: record.templateId,
      status: record.status,
      logEntries: record.log.page(Math.max(0, Math.floor(logsOffset)), LOG_PAGE_SIZE),
      logs: [],
      ...(record.reason ? { reason: record.reason } : {}),
    };
  }

  /**
   * Resolves when the build ends (whatever the outcome); for callers that start a build and then wait for it
   * without polling. A build that was requested but never started has nothing to wait for: failed_precondition
   * (waiting for it could last forever). The signal stops the waiting, not the build.
   */
  async waitForBuild(buildId: string, signal?: AbortSignal): Promise<BuildStatusPage & { counters: BuildCounters }> {
    const record = this.record(buildId);
    if (!record) throw new TemplateBuildError(Code.NotFound, `build ${buildId} not found`);
    const { done } = record;
    if (!done) throw new TemplateBuildError(Code.FailedPrecondition, `build ${buildId} has not been started`);
    await settledOrAborted(done, signal);
    return { ...this.status(record.templateId, buildId, 0), counters: { ...record.counters } };
  }

  /** Subscribe to a build's log as it is written (CLI-less callers, e.g. building shipped definitions). */
  onBuildLog(buildId: string, listener: (entry: BuildLogEntry) => void): () => void {
    const record = this.record(buildId);
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
    const onAbort = () => this.builds.get(requested.buildID)?.controller.abort(opts.signal?.reason);
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
    const record = this.record(buildId);
    return record ? { ...record.counters } : undefined;
  }

  list(): TemplateSummary[] {
    const out: TemplateSummary[] = this.deps.store.list().map((m) => ({
      templateId: m.templateId,
      aliases: [...m.aliases],
      buildId: m.buildId !== undefined ? wireBuildId(m.buildId) : undefined,
      tags: Object.keys(m.tags ?? {}),
      createdAt: m.createdAt,
      cpuCount: m.defaults.cpuCount,
      memoryMB: m.defaults.memoryMB,
      buildStatus: "ready" as const,
    }));
    return out;
  }

  /** Tags of a template: `[{tag, buildID, createdAt}]`. */
  tagsOf(templateRef: string): { tag: string; buildID: string; createdAt: string }[] {
    const manifest = this.requireTemplate(templateRef);
    return Object.entries(manifest.tags ?? {}).map(([tag, buildID]) => ({
      tag,
      buildID: wireBuildId(buildID),
      createdAt: manifest.builds?.[buildID]?.createdAt ?? manifest.createdAt,
    }));
  }

  /**
   * A template (id or name) and every build of it: the published ones and those this process still knows
   * (waiting, building, failed), newest first. A template whose first build has not finished is listed too; a
   * deleted one is not found, whatever builds of it this process remembers.
   */
  templateBuilds(templateRef: string): TemplateWithBuilds {
    const manifest = this.deps.store.resolve(templateRef);
    const pending = new Set(this.pendingNames.values());
    const records = [...this.builds.values()].filter((r) =>
      manifest ? r.templateId === manifest.templateId : pending.has(r.templateId) && (r.templateId === templateRef || r.name === templateRef),
    );
    const templateId = manifest?.templateId ?? records[0]?.templateId;
    if (templateId === undefined) throw new TemplateBuildError(Code.NotFound, `template '${templateRef}' not found`);
    const summaries = new Map<string, TemplateBuildSummary>();
    for (const [buildId, entry] of Object.entries(manifest?.builds ?? {})) {
      const limits = entry.limits ?? manifest?.defaults ?? this.deps.config.defaultLimits;
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
    // What this process knows is newer: the request time, and builds that were never published.
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

  /** POST /templates/tags: point `tags` at the build `target` (`name:tag`) names. */
  async assignTags(target: string, tags: string[]): Promise<{ buildID: string; tags: string[] }> {
    const manifest = this.requireTemplate(target);
    const buildId = manifest.buildId;
    if (!buildId) throw new TemplateBuildError(Code.FailedPrecondition, `template '${target}' has no builds to tag`);
    const clean = [...new Set(tags.map(checkTag))];
    await this.updateManifest(manifest.templateId, (current) => {
      if (!current) throw new TemplateBuildError(Code.NotFound, `template '${target}' not found`);
      const next = { ...(current.tags ?? {}) };
      for (const tag of clean) next[tag] = buildId;
      return withDefaultBuild({ ...current, tags: next });
    });
    return { buildID: wireBuildId(buildId), tags: clean };
  }

  /** DELETE /templates/tags. */
  async removeTags(name: string, tags: string[]): Promise<void> {
    const manifest = this.requireTemplate(name);
    const clean = tags.map(checkTag);
    if (clean.includes(DEFAULT_TAG)) throw new TemplateBuildError(Code.InvalidArgument, "the default tag cannot be removed");
    await this.updateManifest(manifest.templateId, (current) => {
      if (!current) throw new TemplateBuildError(Code.NotFound, `template '${name}' not found`);
      const next = { ...(current.tags ?? {}) };
      for (const tag of clean) {
        if (!(tag in next)) throw new TemplateBuildError(Code.NotFound, `tag '${tag}' not found on '${name}'`);
        delete next[tag];
      }
      return { ...current, tags: next };
    });
  }

  /** DELETE /templates/{id}: unpublish now; layers go at the next garbage collection no sandbox needs them. */
  async deleteTemplate(templateRef: string): Promise<boolean> {
    const manifest = this.deps.store.resolve(templateRef);
    if (!manifest) return false;
    if (manifest.aliases.includes("base")) {
      throw new TemplateBuildError(Code.FailedPrecondition, "the base template cannot be deleted");
    }
    await mkdir(this.deletedDir, { recursive: true });
    const stored = this.deps.store.get(manifest.templateId) ?? manifest;
    await writeFile(join(this.deletedDir, `${manifest.templateId}.json`), JSON.stringify(stored));
    const removed = await this.deps.store.remove(manifest.templateId);
    // In the background: removing large layers should not hold up the reply.
    void this.requestGarbageCollection();
    return removed;
  }

  /**
   * Collect garbage now, or once the builds running now have ended (a build's base import and its temporary
   * directories are not all registered until it finishes). Failures are logged, never thrown: a later
   * collection retries.
   */
  async requestGarbageCollection(): Promise<void> {
    if (this.activeBuilds() > 0) {
      this.gcPending = true;
      return;
    }
    this.gcPending = false;
    const run = this.gcChain.then(async () => {
      const { removedLayers } = await this.collectGarbage();
      if (removedLayers.length > 0) this.deps.logger.info({ removedLayers }, "template layers garbage-collected");
    });
    this.gcChain = run.catch((error: unknown) => this.deps.logger.warn({ err: error }, "template garbage collection failed"));
    await this.gcChain;
  }

  /** A sandbox ended: layers of deleted templates it kept alive may be free now. */
  async sandboxEnded(): Promise<void> {
    const tombstones = await readdir(this.deletedDir).catch(() => [] as string[]);
    if (tombstones.length > 0) await this.requestGarbageCollection();
  }

  /**
   * Remove layers that no template, no deleted template with running sandboxes and no running build references,
   * and temporary directories of builds that no longer run (a killed server leaves them).
   */
  async collectGarbage(extraReferenced: Iterable<string> = []): Promise<{ removedLayers: string[] }> {
    const keep = new Set<string>(extraReferenced);
    for (const manifest of this.deps.store.list()) addManifestLayers(keep, manifest);
    const liveTmp = new Set<string>();
    // Base imports and bootstraps of a running build work in temporary directories it does not register.
    const building = this.activeBuilds() > 0;
    for (const record of this.builds.values()) {
      if (record.status !== "building" && record.status !== "waiting") continue;
      for (const layer of record.layers) keep.add(layer);
      for (const dir of record.tmpDirs) liveTmp.add(dir);
    }
    for (const file of await readdir(this.deletedDir).catch(() => [] as string[])) {
      const tombstone = join(this.deletedDir, file);
      const manifest = JSON.parse(await readFile(tombstone, "utf8")) as TemplateManifest;
      if (this.deps.isTemplateInUse?.(manifest.templateId)) addManifestLayers(keep, manifest);
      else await rm(tombstone, { force: true });
    }
    const removed: string[] = [];
    const root = this.deps.store.layersRoot;
    for (const name of await readdir(root)) {
      const path = join(root, name);
      const isTmp = name.startsWith(TMP_LAYER_PREFIX);
      if (isTmp ? building || liveTmp.has(path) : keep.has(name)) continue;
      // A layer is first renamed to a temporary name: one that cannot be removed (all at once) must not stay under
      // its id, where a build with the same step would take the half-removed directory as its cached layer. What
      // stays is retried by the next collection; one bad layer never stops the others.
      try {
        const doomed = isTmp ? path : join(root, `${TMP_LAYER_PREFIX}gc-${name}-${randomBytes(4).toString("hex")}`);
        if (!isTmp) {
          await rename(path, doomed);
          removed.push(name);
        }
        await removeTree(doomed);
      } catch (error) {
        this.deps.logger.warn({ layer: name, err: error }, "could not remove a layer; the next collection retries");
      }
    }
    return { removedLayers: removed };
  }

  /** Cancel running builds and wait for them to wind down (their sandboxes are destroyed). */
  async close(): Promise<void> {
    clearInterval(this.uploadTimer);
    const running = [...this.builds.values()].filter((b) => b.status === "building");
    for (const record of running) record.controller.abort(new Error("builder closing"));
    await Promise.allSettled(running.map((b) => b.done));
  }

  private activeBuilds(): number {
    let n = 0;
    for (const record of this.builds.values()) if (record.status === "building") n++;
    return n;
  }

  /** Remove uploads no running build uses once they are old enough; failures are logged. Returns how many went. */
  private async collectUploads(): Promise<number> {
    const inUse = new Set<string>();
    for (const record of this.builds.values()) {
      if (record.status === "building" || record.status === "waiting") for (const key of record.uploads) inUse.add(key);
    }
    try {
      return await this.uploads.collect(inUse);
    } catch (error) {
      this.deps.logger.warn({ err: error }, "collecting uploaded build contexts failed");
      return 0;
    }
  }

  /** Uploads are per template: only a template that exists or has a build reserved may have them. */
  private requireKnownTemplate(templateId: string): void {
    if (this.deps.store.get(templateId)) return;
    for (const record of this.builds.values()) if (record.templateId === templateId) return;
    throw new TemplateBuildError(Code.NotFound, `template ${templateId.slice(0, 64)} not found`);
  }

  /**
   * The sha256 of the bytes of a COPY step's upload. It is part of the step's cache key: a layer is reused only
   * for the very bytes it was built from, whatever the client-computed files hash claims.
   */
  private async uploadDigest(record: BuildRecord, step: BuildStep, stepNo: string): Promise<string> {
    const hash = step.filesHash ?? "";
    if (!(await this.uploads.has(record.templateId, hash))) {
      throw new TemplateBuildError(Code.FailedPrecondition, `step ${stepNo}: the files of this COPY (${hash.slice(0, 12)}…) were not uploaded`, {
        step: stepNo,
      });
    }
    const digest = createHash("sha256");
    for await (const chunk of createReadStream(this.uploads.path(record.templateId, hash))) digest.update(chunk as Buffer);
    return digest.digest("hex");
  }

  /** The build `buildId` names; a UUID in any letter case (canonical ids are lowercase). */
  private record(buildId: string): BuildRecord | undefined {
    return this.builds.get(isUuid(buildId) ? buildId.toLowerCase() : buildId);
  }

  private requireBuild(templateId: string, buildId: string): BuildRecord {
    const record = this.record(buildId);
    if (!record || record.templateId !== templateId) {
      throw new TemplateBuildError(Code.NotFound, `build ${buildId} of template ${templateId} not found`);
    }
    return record;
  }

  private requireTemplate(ref: string): TemplateManifest {
    const manifest = this.deps.store.resolve(ref);
    if (!manifest) throw new TemplateBuildError(Code.NotFound, `template '${ref}' not found`);
    return manifest;
  }

  private trimFinished(): void {
    const finished = [...this.builds.values()].filter((b) => b.status === "ready" || b.status === "error");
    for (const record of finished.slice(0, Math.max(0, finished.length - FINISHED_BUILDS_KEPT))) this.builds.delete(record.buildId);
  }

  private async run(record: BuildRecord, spec: BuildSpec): Promise<void> {
    const { log } = record;
    const signal = record.controller.signal;
    let currentStep = "base";
    try {
      log.add("info", `Building template ${record.templateId} (build ${record.buildId})`, "base");
      const base = await resolveBase(spec, {
        store: this.deps.store,
        config: this.deps.config,
        log: (message) => log.add("info", message, "base"),
        signal,
      });
      log.add("info", `Base: ${base.description}`, "base");
      let key = baseKey(base.identity, spec.force);
      let layers = [...base.layers];
      for (const id of layers) record.layers.add(id);
      let state: BuildState = base.state;
      const total = spec.steps.length;
      for (const [index, step] of spec.steps.entries()) {
        signal.throwIfAborted();
        currentStep = String(index + 1);
        const contentDigest =
          step.type === "COPY"
            ? copyCacheKeyInput(await this.uploadDigest(record, step, String(index + 1)), expandVars(step.args[1] ?? "", state), state.workdir)
            : undefined;
        const nextKey = stepKey(key, step, state, contentDigest);
        const title = `[${currentStep}/${total}] ${step.type} ${describeArgs(step)}`;
        if (step.type !== "RUN" && step.type !== "COPY") {
          state = applyStateStep(state, step);
          key = nextKey;
          log.add("info", title, currentStep);
          continue;
        }
        const layerId = layerIdForKey(nextKey);
        record.layers.add(layerId);
        if (await layerExists(this.deps.store.layersRoot, layerId)) {
          log.add("info", `CACHED ${title}`, currentStep);
          record.counters.stepsCached++;
        } else {
          log.add("info", title, currentStep);
          await this.buildLayer(record, step, currentStep, layers, state, layerId, signal);
          record.counters.stepsRun++;
        }
        layers = [layerId, ...layers];
        key = nextKey;
      }
      currentStep = "finalize";
      const runtime: TemplateRuntime = {
        env: { ...state.env },
        user: state.user,
        workdir: state.workdir,
        startCmd: spec.startCmd,
        readyCmd: spec.readyCmd,
      };
      // A bad ready timeout fails the build rather than every create from the template.
      try {
        templateReadyTimeoutMs(runtime.env);
      } catch (error) {
        throw new TemplateBuildError(Code.InvalidArgument, (error as Error).message, { step: "finalize" });
      }
      await this.publish(record, layers, runtime);
      record.status = "ready";
      record.finishedAt = new Date().toISOString();
      log.add("info", `Template ${record.name} ready (${record.counters.stepsRun} steps run, ${record.counters.stepsCached} cached)`, "finalize");
    } catch (error) {
      const failure =
        error instanceof TemplateBuildError
          ? error
          : signal.aborted
            ? new TemplateBuildError(Code.Canceled, "build canceled", { step: currentStep, cause: error })
            : new TemplateBuildError(Code.Internal, (error as Error).message, { step: currentStep, cause: error });
      const step = failure.step ?? currentStep;
      log.add("error", failure.message, step);
      record.reason = { message: failure.message, step, logEntries: log.tail(20) };
      record.status = "error";
      record.finishedAt = new Date().toISOString();
      if (failure.code === Code.Internal) this.deps.logger.error({ err: error, buildId: record.buildId }, "template build failed");
    } finally {
      // What will not go now is a temporary directory of no running build: garbage collection retries it.
      for (const dir of record.tmpDirs) {
        await removeTree(dir).catch((error: unknown) => this.deps.logger.warn({ dir, err: error }, "could not remove a build's temporary directory"));
      }
      record.tmpDirs.clear();
    }
  }

  private async buildLayer(
    record: BuildRecord,
    step: BuildStep,
    stepNo: string,
    layers: string[],
    state: BuildState,
    layerId: string,
    signal: AbortSignal,
  ): Promise<void> {
    const root = this.deps.store.layersRoot;
    const scratch = await makeTmpLayerDir(root, layerId);
    record.tmpDirs.add(scratch);
    const resultDir = join(scratch, "layer");
    const emit = (level: BuildLogLevel, line: string) => record.log.add(level, line, stepNo);
    if (step.type === "RUN") {
      const user = step.args[1] || state.user;
      await runRunStep({
        host: this.deps.host,
        buildId: record.buildId,
        layers,
        limits: { ...record.limits, memoryMB: Math.max(record.limits.memoryMB, BUILD_MIN_MEMORY_MB) },
        command: step.args[0] ?? "",
        user,
        workdir: state.workdir,
        env: runEnv(state),
        step: stepNo,
        onLine: (_stream, line) => emit("info", line),
        resultDir,
        signal,
      });
    } else {
      const hash = step.filesHash ?? "";
      const archive = this.uploads.path(record.templateId, hash);
      await this.verifyUpload(record, step, stepNo, archive);
      await mkdir(resultDir);
      const copied = await runCopyStep({
        archive,
        src: step.args[0] ?? "",
        dest: expandVars(step.args[1] ?? "", state),
        owner: step.args[2] || state.user,
        user: state.user,
        mode: step.args[3] ?? "",
        workdir: state.workdir,
        lowerDirs: layers.map((id) => this.deps.store.layerPath(id)),
        layerDir: resultDir,
        scratchDir: scratch,
        uidBase: this.deps.config.uidBase,
        step: stepNo,
      });
      emit("info", `copied ${copied.length} ${copied.length === 1 ? "entry" : "entries"}`);
    }
    await commitLayerDir(root, layerId, resultDir);
  }

  /**
   * Check a COPY step's upload against its files hash before anything is unpacked (files-hash.ts). A mismatch
   * or an unreadable archive deletes the upload, so the client's next build uploads its files anew.
   */
  private async verifyUpload(record: BuildRecord, step: BuildStep, stepNo: string, archive: string): Promise<void> {
    const hash = step.filesHash ?? "";
    const src = step.args[0] ?? "";
    const { verdict, unpackedBytes } = await checkFilesHash(archive, src, step.args[1] ?? "", hash);
    if (verdict === "mismatch" || verdict === "unreadable") {
      await this.uploads.remove(record.templateId, hash);
      const what = verdict === "mismatch" ? `do not match their files hash ${hash.slice(0, 12)}…` : "are not a tar archive the SDK makes";
      throw new TemplateBuildError(
        Code.InvalidArgument,
        `step ${stepNo}: the uploaded files of COPY '${src}' ${what}; the upload was discarded, build again to upload the files anew`,
        { step: stepNo },
      );
    }
    if (unpackedBytes > this.deps.config.uploads.maxUnpackedBytes) {
      throw new TemplateBuildError(
        Code.ResourceExhausted,
        `step ${stepNo}: the files of COPY '${src}' unpack to ${unpackedBytes} bytes, more than the server's limit of ${this.deps.config.uploads.maxUnpackedBytes}`,
        { step: stepNo },
      );
    }
    record.log.add("debug", `files of COPY '${src}': ${verdict === "verified" ? "match their files hash" : "kept as uploaded for this template (directory sizes depend on the client's filesystem)"}`, stepNo);
  }

  /** Write the manifest last and atomically: until then the build is invisible. */
  private async publish(record: BuildRecord, layers: string[], runtime: TemplateRuntime): Promise<void> {
    const createdAt = new Date().toISOString();
    await this.updateManifest(record.templateId, (current) => {
      const builds = { ...(current?.builds ?? {}), [record.buildId]: { layers, runtime, createdAt, limits: record.limits } };
      const tags = { ...(current?.tags ?? {}) };
      for (const tag of record.tags) tags[tag] = record.buildId;
      if (!tags[DEFAULT_TAG]) tags[DEFAULT_TAG] = record.buildId;
      const aliases = [...new Set([...(current?.aliases ?? []), record.name])];
      return withDefaultBuild({
        templateId: record.templateId,
        aliases,
        layers,
        defaults: record.limits,
        createdAt: current?.createdAt ?? createdAt,
        builds,
        tags,
      });
    });
  }

  /** Read-modify-write of one manifest, serialized per template so concurrent builds do not lose builds or tags. */
  private async updateManifest(
    templateId: string,
    update: (current: TemplateManifest | undefined) => TemplateManifest,
  ): Promise<void> {
    const previous = this.saveLocks.get(templateId) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(async () => {
      await this.deps.store.save(update(this.deps.store.get(templateId)));
    });
    this.saveLocks.set(templateId, next);
    try {
      await next;
    } finally {
      if (this.saveLocks.get(templateId) === next) this.saveLocks.delete(templateId);
    }
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

/** Newest build first; builds created at the same instant by id, so the order is total (a cursor can follow it). */
export function newestFirst(a: TemplateBuildSummary, b: TemplateBuildSummary): number {
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? 1 : -1;
  return a.buildID < b.buildID ? 1 : a.buildID > b.buildID ? -1 : 0;
}

/** `layers`, `runtime` and `buildId` follow the build the default tag names. */
function withDefaultBuild(manifest: TemplateManifest): TemplateManifest {
  const buildId = manifest.tags?.[DEFAULT_TAG];
  const build = buildId !== undefined ? manifest.builds?.[buildId] : undefined;
  if (!build || buildId === undefined) return manifest;
  return { ...manifest, layers: build.layers, runtime: build.runtime, buildId };
}

function addManifestLayers(keep: Set<string>, manifest: TemplateManifest): void {
  for (const id of manifest.layers) keep.add(id);
  for (const build of Object.values(manifest.builds ?? {})) for (const id of build.layers) keep.add(id);
}

function describeArgs(step: BuildStep): string {
  if (step.type === "RUN") return step.args[0] ?? "";
  if (step.type === "COPY") return `${step.args[0] ?? ""} ${step.args[1] ?? ""}`;
  if (step.type === "ENV" || step.type === "ARG") {
    const pairs: string[] = [];
    for (let i = 0; i + 1 < step.args.length; i += 2) pairs.push(`${step.args[i]}=${step.args[i + 1]}`);
    return pairs.join(" ");
  }
  return step.args.join(" ");
}
