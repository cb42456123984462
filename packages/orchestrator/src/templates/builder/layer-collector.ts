// Garbage collection of template layers. A layer goes once no template, no deleted template with running sandboxes
// and no waiting or running build references it; temporary directories go once no build runs. Deleting a template
// unpublishes it at once and leaves a tombstone (its manifest) that keeps its layers while its sandboxes run.
import { randomBytes } from "node:crypto";
import { mkdir, readFile, readdir, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Code } from "@burrow/protocol";
import type { Logger } from "../../logger.js";
import { removeTree } from "../../storage/remove-tree.js";
import type { TemplateManifest, TemplateStore } from "../template-store.js";
import type { BuildRegistry } from "./build-registry.js";
import { TMP_LAYER_PREFIX } from "./commit-layer.js";
import { TemplateBuildError } from "./template-build-error.js";

export interface LayerCollectorDeps {
  store: TemplateStore;
  registry: BuildRegistry;
  /** Where tombstones of deleted templates are kept. */
  deletedDir: string;
  /** Whether a sandbox of this template still runs; deleted templates keep their layers until none does. */
  isTemplateInUse?: ((templateId: string) => boolean) | undefined;
  logger: Logger;
}

export class LayerCollector {
  /** Collections run one at a time; one asked for while builds run waits until none does. */
  private chain: Promise<unknown> = Promise.resolve();
  private pending = false;

  constructor(private readonly deps: LayerCollectorDeps) {}

  /** Settles once the collection under way (if any) has: a build starts only then, so none removes a layer it reuses. */
  get idle(): Promise<unknown> {
    return this.chain;
  }

  /** DELETE /templates/{id}: unpublish now; layers go at the next garbage collection no sandbox needs them. */
  async deleteTemplate(templateRef: string): Promise<boolean> {
    const { store, deletedDir } = this.deps;
    const manifest = store.resolve(templateRef);
    if (!manifest) return false;
    if (manifest.aliases.includes("base")) {
      throw new TemplateBuildError(Code.FailedPrecondition, "the base template cannot be deleted");
    }
    await mkdir(deletedDir, { recursive: true });
    const stored = store.get(manifest.templateId) ?? manifest;
    await writeFile(join(deletedDir, `${manifest.templateId}.json`), JSON.stringify(stored));
    const removed = await store.remove(manifest.templateId);
    // In the background: removing large layers should not hold up the reply.
    void this.request();
    return removed;
  }

  /**
   * Collect garbage now, or once the builds running now have ended (a build's base import and its temporary
   * directories are not all registered until it finishes). Failures are logged, never thrown: a later
   * collection retries.
   */
  async request(): Promise<void> {
    if (this.deps.registry.building().length > 0) {
      this.pending = true;
      return;
    }
    this.pending = false;
    const run = this.chain.then(async () => {
      const { removedLayers } = await this.collect();
      if (removedLayers.length > 0) this.deps.logger.info({ removedLayers }, "template layers garbage-collected");
    });
    this.chain = run.catch((error: unknown) => this.deps.logger.warn({ err: error }, "template garbage collection failed"));
    await this.chain;
  }

  /** A build ended: a collection asked for while builds ran goes ahead once none runs. */
  buildEnded(): void {
    if (this.pending && this.deps.registry.building().length === 0) void this.request();
  }

  /** A sandbox ended: layers of deleted templates it kept alive may be free now. */
  async sandboxEnded(): Promise<void> {
    const tombstones = await readdir(this.deps.deletedDir).catch(() => [] as string[]);
    if (tombstones.length > 0) await this.request();
  }

  /** Remove unreferenced layers and temporary directories of builds that no longer run (a killed server leaves them). */
  async collect(extraReferenced: Iterable<string> = []): Promise<{ removedLayers: string[] }> {
    const { store, registry, deletedDir, logger } = this.deps;
    const keep = new Set<string>(extraReferenced);
    for (const manifest of store.list()) addManifestLayers(keep, manifest);
    const liveTmp = new Set<string>();
    // Base imports and bootstraps of a running build work in temporary directories it does not register.
    const building = registry.building().length > 0;
    for (const record of registry.unfinished()) {
      for (const layer of record.layers) keep.add(layer);
      for (const dir of record.tmpDirs) liveTmp.add(dir);
    }
    for (const file of await readdir(deletedDir).catch(() => [] as string[])) {
      const tombstone = join(deletedDir, file);
      const manifest = JSON.parse(await readFile(tombstone, "utf8")) as TemplateManifest;
      if (this.deps.isTemplateInUse?.(manifest.templateId)) addManifestLayers(keep, manifest);
      else await rm(tombstone, { force: true });
    }
    const removed: string[] = [];
    const root = store.layersRoot;
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
        logger.warn({ layer: name, err: error }, "could not remove a layer; the next collection retries");
      }
    }
    return { removedLayers: removed };
  }
}

function addManifestLayers(keep: Set<string>, manifest: TemplateManifest): void {
  for (const id of manifest.layers) keep.add(id);
  for (const build of Object.values(manifest.builds ?? {})) for (const id of build.layers) keep.add(id);
}
