// Files inside an image root (an OCI layout directory, or an image tarball unpacked to scratch space). The
// image decides what those paths are, so they are opened only through real directories and only when they
// are regular files: a symbolic link in the image (`index.json → /var/lib/burrow/api-key`) is refused, never
// followed, and messages name the path inside the image, not on the host.
import { constants } from "node:fs";
import { lstat, readFile } from "node:fs/promises";
import { join } from "node:path";
import { Code } from "@burrow/protocol";
import { TemplateBuildError } from "../builder/template-build-error.js";

/** Image metadata (index, manifests, configs) is small; a larger "JSON" file is not one. */
const MAX_METADATA_BYTES = 16 << 20;

function fail(message: string): never {
  throw new TemplateBuildError(Code.InvalidArgument, message, { step: "base" });
}

function parts(rel: string): string[] {
  const out = rel.split("/").filter((p) => p !== "" && p !== ".");
  if (rel.startsWith("/") || out.includes("..")) fail(`unsafe path '${rel}' in image`);
  return out;
}

/**
 * Host path of the regular file `rel` under `root`, or undefined when absent. Every component is checked
 * with lstat: a symbolic link or other non-directory on the way, or a final entry that is not a regular file,
 * is an error.
 */
export async function imageFile(root: string, rel: string): Promise<string | undefined> {
  const names = parts(rel);
  let path = root;
  for (const [index, name] of names.entries()) {
    path = join(path, name);
    const st = await lstat(path).catch(() => undefined);
    if (!st) return undefined;
    const last = index === names.length - 1;
    if (st.isSymbolicLink()) fail(`'${names.slice(0, index + 1).join("/")}' in the image is a symbolic link; image files must be regular files`);
    if (!last && !st.isDirectory()) return undefined;
    if (last && !st.isFile()) fail(`'${rel}' in the image is not a regular file`);
  }
  return path;
}

export async function requireImageFile(root: string, rel: string): Promise<string> {
  const path = await imageFile(root, rel);
  if (path === undefined) fail(`the image has no '${rel}'`);
  return path;
}

/** Parse the JSON file `rel` of the image. */
export async function readImageJson<T>(root: string, rel: string): Promise<T> {
  const path = await requireImageFile(root, rel);
  if ((await lstat(path)).size > MAX_METADATA_BYTES) fail(`'${rel}' in the image is too large for image metadata`);
  try {
    return JSON.parse(await readFile(path, { encoding: "utf8", flag: constants.O_RDONLY | constants.O_NOFOLLOW })) as T;
  } catch {
    // JSON.parse quotes the text it choked on; the file's content stays out of the message.
    return fail(`'${rel}' in the image is not valid JSON`);
  }
}
