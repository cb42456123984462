// Templates on disk: one JSON manifest per template naming its read-only layers (top first) and the
// defaults its sandboxes inherit. Layers live in <state>/layers/<layerId>; a template never owns them
// exclusively, so snapshots and custom templates can stack on shared layers.
import { mkdir, readdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { TemplateInfo } from "../orchestrator-api.js";
import type { SandboxLimits } from "../types.js";

export interface TemplateManifest {
  templateId: string;
  aliases: string[];
  /** Layer ids, top layer first (overlayfs lowerdir order). */
  layers: string[];
  defaults: SandboxLimits;
  createdAt: string;
}

export class TemplateStore {
  private readonly byId = new Map<string, TemplateManifest>();

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

  /** Resolve an id, an alias or `alias:tag` (tags other than `latest` are not stored yet). */
  resolve(ref: string): TemplateManifest | undefined {
    const direct = this.byId.get(ref);
    if (direct) return direct;
    const [name, tag] = ref.split(":", 2);
    if (tag !== undefined && tag !== "latest" && tag !== "default") return undefined;
    for (const manifest of this.byId.values()) {
      if (manifest.aliases.includes(name ?? "")) return manifest;
    }
    return undefined;
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
