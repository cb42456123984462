import { constants } from "node:fs";

const S_IFMT = constants.S_IFMT;
// not in node's fs.constants typings
const S_ISUID = 0o4000, S_ISGID = 0o2000, S_ISVTX = 0o1000;

/**
 * Go's `os.FileMode.String()` for a POSIX st_mode: type letters from "dalTLDpSugct?" in Go's bit order, then
 * rwxrwxrwx, e.g. `-rw-r--r--`, `drwxr-xr-x`, `Lrwxrwxrwx`, `dtrwxrwxrwx`, `Dcrw-rw-rw-`, `urwxr-xr-x`.
 */
export function goFileModeString(mode: number): string {
  const type = mode & S_IFMT;
  let out = "";
  if (type === constants.S_IFDIR) out += "d";
  if (type === constants.S_IFLNK) out += "L";
  if (type === constants.S_IFBLK || type === constants.S_IFCHR) out += "D";
  if (type === constants.S_IFIFO) out += "p";
  if (type === constants.S_IFSOCK) out += "S";
  if (mode & S_ISUID) out += "u";
  if (mode & S_ISGID) out += "g";
  if (type === constants.S_IFCHR) out += "c";
  if (mode & S_ISVTX) out += "t";
  if (out === "") out = "-";
  const rwx = "rwxrwxrwx";
  for (let i = 0; i < 9; i++) out += mode & (1 << (8 - i)) ? rwx[i] : "-";
  return out;
}
