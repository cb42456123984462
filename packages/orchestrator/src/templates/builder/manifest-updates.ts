// Changes to template manifests: a finished build is published by writing its manifest last and atomically (until
// then the build is invisible), and tags are pointed at builds or removed. Changes to one template are read,
// modified and written one at a time, so that concurrent builds and tag changes lose no builds or tags.
import { Code } from "@burrow/protocol";
import { wireBuildId } from "../build-ids.js";
import type { TemplateManifest, TemplateRuntime, TemplateStore } from "../template-store.js";
import type { BuildRecord } from "./build-registry.js";
import { TemplateBuildError } from "./template-build-error.js";
import { checkTag, DEFAULT_TAG } from "./template-names.js";

export class ManifestUpdates {
  private readonly saveLocks = new Map<string, Promise<unknown>>();

  constructor(private readonly store: TemplateStore) {}

  /** Add the build to its template's manifest (creating it on a first build) and point the build's tags at it. */
  async publish(record: BuildRecord, layers: string[], runtime: TemplateRuntime): Promise<void> {
    const createdAt = new Date().toISOString();
    await this.update(record.templateId, (current) => {
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

  /** POST /templates/tags: point `tags` at the build `target` (`name:tag`) names. */
  async assignTags(target: string, tags: string[]): Promise<{ buildID: string; tags: string[] }> {
    const manifest = requireTemplate(this.store, target);
    const buildId = manifest.buildId;
    if (!buildId) throw new TemplateBuildError(Code.FailedPrecondition, `template '${target}' has no builds to tag`);
    const clean = [...new Set(tags.map(checkTag))];
    await this.update(manifest.templateId, (current) => {
      if (!current) throw new TemplateBuildError(Code.NotFound, `template '${target}' not found`);
      const next = { ...(current.tags ?? {}) };
      for (const tag of clean) next[tag] = buildId;
      return withDefaultBuild({ ...current, tags: next });
    });
    return { buildID: wireBuildId(buildId), tags: clean };
  }

  /** DELETE /templates/tags. */
  async removeTags(name: string, tags: string[]): Promise<void> {
    const manifest = requireTemplate(this.store, name);
    const clean = tags.map(checkTag);
    if (clean.includes(DEFAULT_TAG)) throw new TemplateBuildError(Code.InvalidArgument, "the default tag cannot be removed");
    await this.update(manifest.templateId, (current) => {
      if (!current) throw new TemplateBuildError(Code.NotFound, `template '${name}' not found`);
      const next = { ...(current.tags ?? {}) };
      for (const tag of clean) {
        if (!(tag in next)) throw new TemplateBuildError(Code.NotFound, `tag '${tag}' not found on '${name}'`);
        delete next[tag];
      }
      return { ...current, tags: next };
    });
  }

  /** Read-modify-write of one manifest, serialized per template. */
  private async update(templateId: string, update: (current: TemplateManifest | undefined) => TemplateManifest): Promise<void> {
    const previous = this.saveLocks.get(templateId) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(async () => {
      await this.store.save(update(this.store.get(templateId)));
    });
    this.saveLocks.set(templateId, next);
    try {
      await next;
    } finally {
      if (this.saveLocks.get(templateId) === next) this.saveLocks.delete(templateId);
    }
  }
}

/** The template `ref` (id, name or `name:tag`) names: not_found when none. */
export function requireTemplate(store: TemplateStore, ref: string): TemplateManifest {
  const manifest = store.resolve(ref);
  if (!manifest) throw new TemplateBuildError(Code.NotFound, `template '${ref}' not found`);
  return manifest;
}

/** `layers`, `runtime` and `buildId` follow the build the default tag names. */
function withDefaultBuild(manifest: TemplateManifest): TemplateManifest {
  const buildId = manifest.tags?.[DEFAULT_TAG];
  const build = buildId !== undefined ? manifest.builds?.[buildId] : undefined;
  if (!build || buildId === undefined) return manifest;
  return { ...manifest, layers: build.layers, runtime: build.runtime, buildId };
}
