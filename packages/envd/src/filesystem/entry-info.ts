import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { filesystemPb } from "@burrow/protocol";
import { constants, type Stats } from "node:fs";
import { lstat, readlink, realpath, stat } from "node:fs/promises";
import { basename, dirname, resolve } from "node:path";
import type { UserDb } from "../users/user-db.js";
import { goFileModeString } from "./file-mode.js";
import { readMetadata } from "./metadata.js";

const { FileType, EntryInfoSchema } = filesystemPb;

function fileTypeOf(s: Stats): filesystemPb.FileType {
  if (s.isDirectory()) return FileType.DIRECTORY;
  if (s.isSymbolicLink()) return FileType.SYMLINK;
  return FileType.FILE;
}

/**
 * A directory's size as ext4 (what E2B sandboxes run on) reports it: the blocks its entries take, at least one.
 * On ext4 that is st_size itself (4096 for a small directory). Overlayfs over btrfs or tmpfs report an entry-name
 * count instead, 0 for an empty directory, which clients treat as "no size" (the SDK's own tests expect > 0).
 */
function directorySize(s: Stats): number {
  const block = s.blksize > 0 ? s.blksize : 4096;
  return Math.max(block, Math.ceil(s.size / block) * block);
}

/**
 * EntryInfo as E2B's envd fills it: `mode` = permission bits, `permissions` = Go FileMode string of the entry itself,
 * owner/group names; a symlink reports its target's type and mode and an absolute `symlinkTarget`.
 */
export async function entryInfo(path: string, users: UserDb): Promise<filesystemPb.EntryInfo> {
  const l = await lstat(path);
  let effective = l;
  let symlinkTarget: string | undefined;
  if (l.isSymbolicLink()) {
    try {
      symlinkTarget = await realpath(path);
      effective = await stat(path);
    } catch {
      // dangling link: report the link itself
      symlinkTarget = resolve(dirname(path), await readlink(path).catch(() => ""));
    }
  }
  return create(EntryInfoSchema, {
    name: basename(path) || "/",
    type: fileTypeOf(effective),
    path,
    size: BigInt(effective.isDirectory() ? directorySize(effective) : effective.size),
    mode: effective.mode & 0o777,
    permissions: goFileModeString(l.mode),
    owner: users.userName(l.uid),
    group: users.groupName(l.gid),
    modifiedTime: timestampFromMs(Math.floor(l.mtimeMs)),
    symlinkTarget,
    metadata: readMetadata(path),
  });
}

export function isDirMode(mode: number): boolean {
  return (mode & constants.S_IFMT) === constants.S_IFDIR;
}
