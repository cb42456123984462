// Request fields that name a path on the server's host. Such a path reads host files into a sandbox or a template,
// so only the instance admin key (the operator's) may send one; the orchestrator's own directory rule
// (imageImportDir) still applies on top.
import { isAbsolute } from "node:path";

const IMAGE_PATH_PREFIXES = ["oci:", "oci-archive:", "docker-archive:"];

/** Whether a template build's `fromImage` names a local image by host path rather than a registry image. */
export function isHostImagePath(image: string): boolean {
  const trimmed = image.trim();
  return IMAGE_PATH_PREFIXES.some((p) => trimmed.startsWith(p)) || isAbsolute(trimmed);
}

/** The host paths a template build body names (its `fromImage`), for the refusal message. */
export function hostPathsInBuild(body: unknown): string[] {
  if (typeof body !== "object" || body === null) return [];
  const fromImage = (body as { fromImage?: unknown }).fromImage;
  return typeof fromImage === "string" && isHostImagePath(fromImage) ? [fromImage] : [];
}
