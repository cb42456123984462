// Names of snapshots: a snapshot may be given a template name without a tag; the name moves to the newest snapshot
// given it, and a template's name is never taken.
import { BurrowError, Code } from "@burrow/protocol";
import { parseTemplateName } from "../templates/builder/template-names.js";
import type { TemplateStore } from "../templates/template-store.js";
import { isSnapshotManifest } from "./snapshot-layer.js";

/** A snapshot name: a template name without tag (or the default tag); may not be a template's name. */
export function snapshotAlias(templates: TemplateStore, name: string): string {
  let parsed: { name: string; tag?: string | undefined };
  try {
    parsed = parseTemplateName(name);
  } catch (error) {
    throw new BurrowError(Code.InvalidArgument, (error as Error).message, { reason: "invalid_snapshot_name", cause: error });
  }
  if (parsed.tag !== undefined && parsed.tag !== "default" && parsed.tag !== "latest") {
    throw new BurrowError(Code.InvalidArgument, `snapshot names take no tag other than 'default', got '${name}'`, {
      reason: "invalid_snapshot_name",
    });
  }
  const existing = templates.resolve(parsed.name);
  if (existing && !isSnapshotManifest(existing)) {
    throw new BurrowError(Code.FailedPrecondition, `'${parsed.name}' is the name of a template, not of a snapshot`, {
      reason: "snapshot_name_taken",
    });
  }
  return parsed.name;
}

/** A name given to a new snapshot leaves the snapshot that had it (which stays reachable by its id). */
export async function moveAlias(templates: TemplateStore, alias: string, toTemplateId: string): Promise<void> {
  for (const manifest of templates.list()) {
    if (manifest.templateId === toTemplateId || !manifest.aliases.includes(alias)) continue;
    await templates.save({ ...manifest, aliases: manifest.aliases.filter((a) => a !== alias) });
  }
}
