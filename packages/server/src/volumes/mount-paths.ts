// Where a volume may be mounted inside a sandbox: an absolute, normalized path that is not "/" and not in or under
// what the sandbox's init owns (/proc, /sys, /dev and the runtime at /.burrow). Checked before anything starts, so a
// bad path is a 400 naming it and nothing was created.
import { BurrowError, Code } from "@burrow/protocol";

const RESERVED = ["/proc", "/sys", "/dev", "/.burrow"];
/** What the launcher accepts in one component and in the whole path. */
const MAX_COMPONENT = 255;
const MAX_PATH = 4095;

export function checkMountPath(path: unknown): string {
  const bad = (why: string) =>
    new BurrowError(Code.InvalidArgument, `volume mount path ${JSON.stringify(path)} ${why}`, { reason: "bad_volume_mount_path" });
  if (typeof path !== "string" || path.length === 0) throw bad("must be a non-empty string");
  if (!path.startsWith("/")) throw bad("must be absolute");
  if (path.length > MAX_PATH || path.includes("\0")) throw bad("is too long or holds a NUL");
  const trimmed = path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
  if (trimmed === "/") throw bad("would cover the sandbox's whole filesystem");
  const parts = trimmed.slice(1).split("/");
  if (parts.some((p) => p === "" || p === "." || p === "..")) throw bad("must not hold empty, '.' or '..' components");
  if (parts.some((p) => Buffer.byteLength(p) > MAX_COMPONENT)) throw bad("has a component longer than 255 bytes");
  for (const reserved of RESERVED) {
    if (trimmed === reserved || trimmed.startsWith(`${reserved}/`)) throw bad(`is in ${reserved}, which the sandbox's init owns`);
  }
  return trimmed;
}
