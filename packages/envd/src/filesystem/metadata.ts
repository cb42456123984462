import { nativeAddon } from "../native/native-modules.js";

/** File metadata lives in `user.e2b.<key>` xattrs; clients see the key without the prefix. */
export const METADATA_PREFIX = "user.e2b.";

export function readMetadata(path: string): Record<string, string> {
  const addon = nativeAddon();
  const out: Record<string, string> = {};
  let names: string[];
  try {
    names = addon.listXattrs(path);
  } catch {
    return out; // filesystems without xattrs simply have no metadata
  }
  for (const name of names) {
    if (!name.startsWith(METADATA_PREFIX)) continue;
    const value = addon.getXattr(path, name);
    if (value) out[name.slice(METADATA_PREFIX.length)] = value.toString("utf8");
  }
  return out;
}

/** Replaces the whole metadata set (an upload without X-Metadata-* headers clears it). */
export function replaceMetadata(path: string, metadata: Record<string, string>): void {
  const addon = nativeAddon();
  let existing: string[] = [];
  try {
    existing = addon.listXattrs(path);
  } catch (err) {
    if (Object.keys(metadata).length > 0) throw err;
    return;
  }
  for (const name of existing) if (name.startsWith(METADATA_PREFIX)) addon.removeXattr(path, name);
  for (const [key, value] of Object.entries(metadata)) {
    addon.setXattr(path, METADATA_PREFIX + key, Buffer.from(value, "utf8"));
  }
}
