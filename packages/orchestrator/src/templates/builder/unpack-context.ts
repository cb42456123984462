// Unpack an uploaded build context (tar or tar.gz) into an empty directory on the host.
//
// node-tar refuses absolute paths and `..`, and will not write through a symbolic link it created. Symbolic
// links are data here: a context may hold `config → /etc/app/config`, meant for the sandbox, which node-tar
// would rewrite or refuse. So links are held back while node-tar unpacks everything else (no link exists
// during extraction, so nothing can be written through one) and created afterwards exactly as archived, each
// under real directories of the unpack directory. Later entries win over earlier ones, as in tar.
import { lstat, mkdir, rm, symlink } from "node:fs/promises";
import { join, posix } from "node:path";
import { BurrowError, Code } from "@burrow/protocol";
import * as tar from "tar";

/** The reason of an uploaded context that cannot be unpacked (InvalidArgument). */
export const BAD_CONTEXT_ARCHIVE = "bad_context_archive";

function archiveError(message: string, cause?: unknown): BurrowError {
  return new BurrowError(Code.InvalidArgument, message, { reason: BAD_CONTEXT_ARCHIVE, cause });
}

interface HeldLink {
  path: string;
  target: string;
  index: number;
}

export async function unpackContext(archive: string, dir: string): Promise<void> {
  const links: HeldLink[] = [];
  /** Index of the last entry of each path, links included. */
  const lastIndex = new Map<string, number>();
  let index = 0;
  try {
    await tar.x({
      file: archive,
      cwd: dir,
      // As root node-tar would otherwise apply the uploader's uids; the COPY step sets owners.
      preserveOwner: false,
      strict: true,
      filter: (path, entry) => {
        const i = index++;
        const clean = entryPath(path);
        lastIndex.set(clean, i);
        if ("type" in entry && entry.type === "SymbolicLink") {
          links.push({ path: clean, target: String(entry.linkpath ?? ""), index: i });
          return false;
        }
        return true;
      },
    });
    for (const link of links) {
      if (lastIndex.get(link.path) !== link.index) continue;
      await placeLink(dir, link);
    }
  } catch (error) {
    if (error instanceof BurrowError && error.reason === BAD_CONTEXT_ARCHIVE) throw error;
    // node-tar's and the filesystem's messages carry host paths (the unpack directory); they stay on the host.
    const code = (error as { code?: unknown }).code;
    const detail = String((error as Error).message ?? error)
      .replaceAll(`${dir}/`, "")
      .replaceAll(dir, ".")
      .replaceAll(archive, "the archive");
    throw archiveError(typeof code === "string" && !detail.includes(code) ? `${code}: ${detail}` : detail, error);
  }
}

/** The path as node-tar writes it: no `./` prefix, no trailing slash. */
function entryPath(path: string): string {
  const normal = posix.normalize(path.replace(/\/+$/, ""));
  return normal === "." ? "" : normal.replace(/^(\.\/)+/, "");
}

async function placeLink(dir: string, link: HeldLink): Promise<void> {
  const parts = link.path.split("/").filter((p) => p !== "" && p !== ".");
  if (link.path.startsWith("/") || parts.includes("..") || parts.length === 0 || link.target.includes("\0")) {
    throw archiveError(`symbolic link '${link.path}' has an unsafe path`);
  }
  let parent = dir;
  for (const name of parts.slice(0, -1)) {
    parent = join(parent, name);
    const st = await lstat(parent).catch(() => undefined);
    if (!st) await mkdir(parent, { mode: 0o755 });
    else if (!st.isDirectory()) throw archiveError(`symbolic link '${link.path}' is below something that is not a directory`);
  }
  const path = join(parent, parts[parts.length - 1] as string);
  // What is there came from an earlier entry (a later one would have won above): the link replaces it.
  await rm(path, { recursive: true, force: true });
  await symlink(link.target, path);
}
