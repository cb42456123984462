// Which host paths a build may import an image from. A build request comes from an API client, and an image
// path names a file on the server: without a rule, `fromImage('docker-archive:/…')` reads any file the server
// can (including an upload the same client just made). Only paths under the directory the operator chose
// (imageImportDir) are allowed, checked lexically before anything is looked at — so a refusal says nothing
// about whether the path exists — and again on the real path, so a symbolic link cannot lead out.
import { realpath } from "node:fs/promises";
import { isAbsolute, normalize, sep } from "node:path";
import { Code } from "@burrow/protocol";
import type { OrchestratorConfig } from "../../config.js";
import { TemplateBuildError } from "../builder/template-build-error.js";

const ENABLE_HINT =
  "set BURROW_IMAGE_DIR (orchestrator config imageImportDir) to a directory of image files on the server, and put the image there";

function refuse(message: string): never {
  throw new TemplateBuildError(Code.PermissionDenied, message, { step: "base" });
}

function isWithin(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep);
}

/** The real path of an allowed image path; a TemplateBuildError otherwise. */
export async function checkImagePath(path: string, config: Pick<OrchestratorConfig, "imageImportDir" | "stateDir" | "cacheDir">): Promise<string> {
  const dir = config.imageImportDir;
  if (dir === undefined || dir === "") refuse(`importing images from host paths is disabled on this server; to enable it, ${ENABLE_HINT}`);
  const outside = () => refuse(`image path ${path} is outside the server's image directory ${dir}; put the image there`);
  if (!isAbsolute(path)) outside();
  const lexical = normalize(path);
  if (!isWithin(lexical, normalize(dir)) || lexical === normalize(dir)) outside();

  let realDir: string;
  try {
    realDir = await realpath(dir);
  } catch {
    return refuse(`the server's image directory ${dir} does not exist; ${ENABLE_HINT}`);
  }
  const forbidden = await Promise.all([config.stateDir, config.cacheDir].map((d) => realpath(d).catch(() => normalize(d))));
  if (forbidden.some((d) => isWithin(realDir, d) || isWithin(d, realDir))) {
    refuse(`the server's image directory ${dir} overlaps its state or cache directory; ${ENABLE_HINT}`);
  }
  let real: string;
  try {
    real = await realpath(lexical);
  } catch {
    throw new TemplateBuildError(Code.NotFound, `image path ${path} does not exist`, { step: "base" });
  }
  if (!isWithin(real, realDir) || real === realDir) outside();
  return real;
}
