// Does an uploaded COPY context match the files hash its build step names?
//
// The official SDK computes the hash on the client: sha256 over `COPY <src> <dest>`, then for every matched
// path in sorted order its relative POSIX path, its stat mode and size (decimal) and its content (a symbolic
// link's target); the upload is a tar of the same paths in the same order. Everything but a directory's size
// is in the tar (type and permission bits, file sizes and bytes, link targets), and a directory's size is
// whatever the client's filesystem reports. So the hash is recomputed with the directory sizes of the common
// filesystems; a context without directories is decided exactly, one with directories is verified when a
// model fits and is otherwise undecidable (never called a mismatch: a legitimate client on another filesystem
// must still build). Undecidable uploads are still the template's own (upload-store.ts), and layers built from
// them are keyed by their bytes (template-builder.ts).
import { createHash, type Hash } from "node:crypto";
import { posix } from "node:path";
import * as tar from "tar";

export type FilesHashVerdict =
  /** Recomputed and equal. */
  | "verified"
  /** Recomputed and different, with nothing unknown in the computation. */
  | "mismatch"
  /** Different under every directory-size model tried: cannot be decided. */
  | "undecidable"
  /** Not a tar archive the SDK could have produced (unreadable, entry types it never writes). */
  | "unreadable";

export interface FilesHashResult {
  verdict: FilesHashVerdict;
  /** Sum of the sizes the archive's entries declare: what unpacking it writes. */
  unpackedBytes: number;
}

interface Entry {
  path: string;
  type: "File" | "Directory" | "SymbolicLink" | "Link";
  mode: number;
  size: number;
  linkpath: string;
}

const TYPE_BITS: Record<Entry["type"], number> = { File: 0o100000, Link: 0o100000, Directory: 0o040000, SymbolicLink: 0o120000 };
/** Content of hard-link targets is held in memory for the links that repeat it; beyond this, undecidable. */
const MAX_LINKED_BYTES = 64 << 20;

/** How directory sizes look on the filesystems a client is likely to run on, from the directory's entries. */
const DIR_SIZE_MODELS: ReadonlyArray<(names: readonly string[]) => number> = [
  // ext4 and most block filesystems (one block for a small directory); also Docker Desktop and WSL2.
  () => 4096,
  // btrfs: two index items per entry, each counting the name's length.
  (names) => 2 * names.reduce((sum, n) => sum + Buffer.byteLength(n), 0),
  // APFS: 32 bytes per entry including . and ..
  (names) => 32 * (names.length + 2),
  // tmpfs: 20 bytes per entry including . and ..
  (names) => 20 * (names.length + 2),
  // XFS short-form directories: a 6-byte header and name + 8 bytes per entry.
  (names) => 6 + names.reduce((sum, n) => sum + Buffer.byteLength(n) + 8, 0),
];

/** Check `archive` (tar or tar.gz) against `expected`, the files hash of `COPY src dest`. */
export async function checkFilesHash(archive: string, src: string, dest: string, expected: string): Promise<FilesHashResult> {
  const entries: Entry[] = [];
  let supported = true;
  try {
    await tar.t({
      file: archive,
      strict: true,
      onReadEntry: (entry) => {
        const type = entry.type;
        if (type === "File" || type === "OldFile" || type === "ContiguousFile" || type === "Directory" || type === "SymbolicLink" || type === "Link") {
          entries.push({
            path: normalizeEntryPath(entry.path),
            type: type === "OldFile" || type === "ContiguousFile" ? "File" : type,
            mode: (entry.mode ?? 0) & 0o7777,
            size: entry.size ?? 0,
            linkpath: entry.linkpath ?? "",
          });
        } else supported = false;
        entry.resume();
      },
    });
  } catch {
    return { verdict: "unreadable", unpackedBytes: 0 };
  }
  const unpackedBytes = entries.reduce((sum, e) => sum + (e.type === "File" ? e.size : 0), 0);
  if (!supported) return { verdict: "unreadable", unpackedBytes };

  const children = new Map<string, string[]>();
  for (const e of entries) {
    if (e.path === "") continue;
    const parent = posix.dirname(e.path) === "." ? "" : posix.dirname(e.path);
    const list = children.get(parent) ?? [];
    list.push(posix.basename(e.path));
    children.set(parent, list);
  }
  const byPath = new Map(entries.map((e) => [e.path, e]));
  const hasDirectories = entries.some((e) => e.type === "Directory");
  const models = hasDirectories ? DIR_SIZE_MODELS : DIR_SIZE_MODELS.slice(0, 1);
  const hashes: Hash[] = models.map(() => createHash("sha256").update(`COPY ${src} ${dest}`));
  const update = (value: string | Buffer) => {
    for (const h of hashes) h.update(value);
  };

  const linkTargets = new Set(entries.filter((e) => e.type === "Link").map((e) => normalizeEntryPath(e.linkpath)));
  const linked = new Map<string, Buffer[]>();
  let linkedBytes = 0;
  let undecidable = false;
  let index = 0;
  try {
    await tar.t({
      file: archive,
      strict: true,
      onReadEntry: (entry) => {
        const type = entry.type;
        if (!(type === "File" || type === "OldFile" || type === "ContiguousFile" || type === "Directory" || type === "SymbolicLink" || type === "Link")) {
          entry.resume();
          return;
        }
        const e = entries[index++] as Entry;
        for (const [m, h] of hashes.entries()) {
          h.update(e.path);
          h.update(String(TYPE_BITS[e.type] | e.mode));
          h.update(String(sizeOf(e, byPath, (children.get(e.path) ?? []) as string[], models[m] as (names: readonly string[]) => number)));
        }
        if (e.type === "SymbolicLink") update(e.linkpath);
        if (e.type === "Link") {
          const content = linked.get(normalizeEntryPath(e.linkpath));
          if (content) for (const chunk of content) update(chunk);
          else undecidable = true;
        }
        const keep = e.type === "File" && linkTargets.has(e.path);
        entry.on("data", (chunk: Buffer) => {
          if (e.type !== "File") return;
          update(chunk);
          if (keep && linkedBytes + chunk.length <= MAX_LINKED_BYTES) {
            linkedBytes += chunk.length;
            const list = linked.get(e.path) ?? [];
            list.push(Buffer.from(chunk));
            linked.set(e.path, list);
          } else if (keep) undecidable = true;
        });
      },
    });
  } catch {
    return { verdict: "unreadable", unpackedBytes };
  }
  const digests = hashes.map((h) => h.digest("hex"));
  if (digests.includes(expected)) return { verdict: "verified", unpackedBytes };
  return { verdict: hasDirectories || undecidable ? "undecidable" : "mismatch", unpackedBytes };
}

/** The path as the SDK hashed it: relative, POSIX, no trailing slash, the context root as "". */
function normalizeEntryPath(path: string): string {
  const trimmed = path.replace(/\/+$/, "");
  if (trimmed === "." || trimmed === "./") return "";
  return trimmed.startsWith("./") ? trimmed.slice(2) : trimmed;
}

function sizeOf(e: Entry, byPath: Map<string, Entry>, names: readonly string[], dirModel: (names: readonly string[]) => number): number {
  switch (e.type) {
    case "File":
      return e.size;
    case "SymbolicLink":
      return Buffer.byteLength(e.linkpath);
    case "Link":
      return byPath.get(normalizeEntryPath(e.linkpath))?.size ?? 0;
    case "Directory":
      return dirModel(names);
  }
}
