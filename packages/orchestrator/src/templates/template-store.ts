// Templates on disk: one JSON manifest per template naming its read-only layers (top first) and the
// defaults its sandboxes inherit. Layers live in <state>/layers/<layerId>; a template never owns them
// exclusively, so snapshots and custom templates can stack on shared layers.
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { TemplateInfo } from "../orchestrator-api.js";
import type { SandboxLimits } from "../types.js";
import { findBuildId } from "./build-ids.js";

export interface TemplateManifest {
  templateId: string;
  aliases: string[];
  /** Layer ids, top layer first (overlayfs lowerdir order). */
  layers: string[];
  defaults: SandboxLimits;
  createdAt: string;
  /** How sandboxes of this template start (custom builds only): env, user, workdir, start/ready commands. */
  runtime?: TemplateRuntime;
  /** Build that `layers` and `runtime` come from (custom builds only). */
  buildId?: string;
  /** Every successful build of this template, by build id; tags point at them. */
  builds?: Record<string, TemplateBuildEntry>;
  /** Tag → build id (`name:tag`). The `default` tag is what the bare name resolves to. */
  tags?: Record<string, string>;
}

/** What a sandbox of a built template inherits from the build's final state. */
export interface TemplateRuntime {
  /** ENV values (ARG values are build-only and not here). */
  env: Record<string, string>;
  user: string;
  workdir?: string | undefined;
  startCmd?: string | undefined;
  readyCmd?: string | undefined;
}

export interface TemplateBuildEntry {
  layers: string[];
  runtime: TemplateRuntime;
  /** When the build was published. */
  createdAt: string;
  /** The limits the build was made with (absent for builds stored before they were kept). */
  limits?: SandboxLimits;
}

export class TemplateStore {
  private readonly byId = new Map<string, TemplateManifest>();
  private readonly changeListeners = new Set<(templateId: string) => void>();

  constructor(
    private readonly templatesDir: string,
    private readonly layersDir: string,
  ) {}

  async load(): Promise<void> {
    await mkdir(this.templatesDir, { recursive: true });
    await mkdir(this.layersDir, { recursive: true });
    this.byId.clear();
    for (const file of await readdir(this.templatesDir)) {
      if (!file.endsWith(".json")) continue;
      const manifest = JSON.parse(await readFile(join(this.templatesDir, file), "utf8")) as TemplateManifest;
      this.byId.set(manifest.templateId, manifest);
    }
  }

  /**
   * Resolve an id, an alias, `alias:tag` or `id:tag`, as E2B does: `default` names the template's current build
   * (what the bare name resolves to); another tag, `latest` included, resolves only when assigned, to the build
   * it points at; a build id (a UUID, or the UUID shown for a pre-UUID build) after the ':' names that build.
   * A tag or build resolves to a manifest whose `layers`/`runtime`/`buildId` are that build's.
   */
  resolve(ref: string): TemplateManifest | undefined {
    const direct = this.byId.get(ref);
    if (direct) return direct;
    const [name = "", tag] = ref.split(":", 2);
    const manifest = this.byId.get(name) ?? [...this.byId.values()].find((m) => m.aliases.includes(name));
    if (!manifest || tag === undefined) return manifest;
    const buildId = manifest.tags?.[tag] ?? findBuildId(Object.keys(manifest.builds ?? {}), tag);
    const build = buildId !== undefined ? manifest.builds?.[buildId] : undefined;
    if (build && buildId !== undefined) return { ...manifest, layers: build.layers, runtime: build.runtime, buildId };
    return tag === "default" ? manifest : undefined;
  }

  get(templateId: string): TemplateManifest | undefined {
    return this.byId.get(templateId);
  }

  /** Remove a template's manifest (its layers stay until garbage collection). False when it did not exist. */
  async remove(templateId: string): Promise<boolean> {
    if (!this.byId.has(templateId)) return false;
    await rm(join(this.templatesDir, `${templateId}.json`), { force: true });
    this.byId.delete(templateId);
    this.changed(templateId);
    return true;
  }

  /**
   * Call `listener` after every save or removal of a manifest (a build published, a tag moved, a template
   * deleted), so that what holds on to a template's layers (the warm pool) can follow. Returns the unsubscribe.
   */
  onChange(listener: (templateId: string) => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  private changed(templateId: string): void {
    for (const listener of this.changeListeners) {
      try {
        listener(templateId);
      } catch {
        // A listener's failure is its own; the manifest is saved either way.
      }
    }
  }

  /** Directory holding every layer, for garbage collection and atomic layer commits. */
  get layersRoot(): string {
    return this.layersDir;
  }

  list(): TemplateManifest[] {
    return [...this.byId.values()];
  }

  layerPath(layerId: string): string {
    return join(this.layersDir, layerId);
  }

  async save(manifest: TemplateManifest): Promise<void> {
    const file = join(this.templatesDir, `${manifest.templateId}.json`);
    await writeFile(`${file}.tmp`, JSON.stringify(manifest, null, 2));
    await rename(`${file}.tmp`, file);
    this.byId.set(manifest.templateId, manifest);
    this.changed(manifest.templateId);
  }
}

export function templateInfo(manifest: TemplateManifest): TemplateInfo {
  return {
    templateId: manifest.templateId,
    aliases: [...manifest.aliases],
    defaults: { ...manifest.defaults },
    createdAt: new Date(manifest.createdAt),
  };
}
