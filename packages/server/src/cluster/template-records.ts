// A template's (or snapshot's) record in the burrow_templates bucket: its manifest as the publishing node has it, and
// for each layer the manifest names either the object holding it (by the sha256 of its archive, layer-archive.ts) or
// the shipped template it comes from. Shipped templates (base, code-interpreter, …) are made by every node itself at
// its first start under layer ids of its own, so their layers never travel: a node fetching a template built on
// base stacks it on its own base. Records are versioned (`v`) and read tolerantly, as node records are.
import type { TemplateManifest } from "@burrow/orchestrator";
import { BurrowError, Code } from "@burrow/protocol";

export const TEMPLATE_RECORD_VERSION = 1;

export type LayerSource =
  /** An object of the layers store, named by `digest`. */
  | { digest: string; size: number }
  /** Layer `index` (top first) of the shipped template `shipped` on the node that fetches it. */
  | { shipped: string; index: number };

export interface TemplateRecord {
  v: number;
  templateId: string;
  aliases: string[];
  kind: "template" | "snapshot";
  /** The owning team's id; null for the publishing node's default team (each node's own, as with keys). */
  team: string | null;
  /** The node that published it. */
  node: string;
  manifest: TemplateManifest;
  /** Every layer id the manifest names (its builds' included) → where it comes from. */
  layers: Record<string, LayerSource>;
  publishedAt: string;
}

export function encodeTemplateRecord(record: TemplateRecord): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(record));
}

export function decodeTemplateRecord(bytes: Uint8Array): TemplateRecord {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(bytes));
  } catch (cause) {
    throw new BurrowError(Code.DataLoss, "a template record is not JSON", { cause, reason: "bad_template_record" });
  }
  const r = value as Partial<TemplateRecord> | null;
  if (!r || typeof r.v !== "number" || typeof r.templateId !== "string" || !r.manifest || typeof r.layers !== "object" || !r.layers) {
    throw new BurrowError(Code.DataLoss, "a template record lacks v, templateId, manifest or layers", { reason: "bad_template_record" });
  }
  return { aliases: [], kind: "template", team: null, node: "", publishedAt: "", ...r } as TemplateRecord;
}

/** Every layer id a manifest names: its current layers and each build's. */
export function manifestLayerIds(manifest: TemplateManifest): string[] {
  const ids = new Set(manifest.layers);
  for (const build of Object.values(manifest.builds ?? {})) for (const id of build.layers) ids.add(id);
  return [...ids];
}

/** The manifest with each layer id replaced as `map` says (ids it does not name stay). */
export function renameLayers(manifest: TemplateManifest, map: ReadonlyMap<string, string>): TemplateManifest {
  const rename = (ids: readonly string[]) => ids.map((id) => map.get(id) ?? id);
  const builds = manifest.builds
    ? Object.fromEntries(Object.entries(manifest.builds).map(([id, build]) => [id, { ...build, layers: rename(build.layers) }]))
    : undefined;
  return { ...manifest, layers: rename(manifest.layers), ...(builds ? { builds } : {}) };
}

/** Whether the reference (id, alias, `name:tag`) names the record's template. */
export function recordMatches(record: TemplateRecord, ref: string): boolean {
  const name = ref.split(":", 1)[0]!;
  return record.templateId === ref || record.templateId === name || record.aliases.includes(name);
}
