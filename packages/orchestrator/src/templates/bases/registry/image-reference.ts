// Image references as Docker and OCI tools write them (`python:3.12-slim`, `ghcr.io/o/r:tag`,
// `localhost:5000/app@sha256:…`), normalised the way the Docker CLI does: a first component with a dot, a colon
// or the name `localhost` is a registry host, anything else lives on Docker Hub, and a one-part Docker Hub
// name is an official image under `library/`.
import { Code } from "@burrow/protocol";
import { TemplateBuildError } from "../../builder/template-build-error.js";

export interface ImageReference {
  /** Registry host as written (`docker.io` for Docker Hub), possibly with a port. */
  registry: string;
  /** Repository path inside the registry, e.g. `library/python`. */
  repository: string;
  /** Tag, when no digest pins the image; `latest` when neither is given. */
  tag: string | undefined;
  /** `sha256:<hex>` when the reference pins a manifest. */
  digest: string | undefined;
}

export const DOCKER_HUB = "docker.io";
/** Docker Hub's registry API host (docker.io itself serves no registry API). */
export const DOCKER_HUB_API_HOST = "registry-1.docker.io";

const COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[\w][\w.-]{0,127}$/;
const DIGEST = /^sha256:[a-f0-9]{64}$/;
const HOST = /^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::\d{1,5})?$|^\[[0-9a-fA-F:]+\](?::\d{1,5})?$/;

function invalid(ref: string, why: string): TemplateBuildError {
  return new TemplateBuildError(Code.InvalidArgument, `image reference '${ref}' is not valid: ${why}`, { step: "base" });
}

export function parseImageReference(input: string): ImageReference {
  const ref = input.trim();
  if (ref === "" || ref.length > 512) throw invalid(input, "it must be 1-512 characters");
  let rest = ref;
  let digest: string | undefined;
  const at = rest.indexOf("@");
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) throw invalid(input, "the digest must be sha256:<64 hex digits>");
  }
  let tag: string | undefined;
  const lastSlash = rest.lastIndexOf("/");
  const colon = rest.lastIndexOf(":");
  if (colon > lastSlash) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag)) throw invalid(input, `tag '${tag}' has characters a tag cannot have`);
  }
  const parts = rest.split("/");
  let registry = DOCKER_HUB;
  const first = parts[0] ?? "";
  if (parts.length > 1 && (first.includes(".") || first.includes(":") || first === "localhost")) {
    if (!HOST.test(first)) throw invalid(input, `'${first}' is not a registry host`);
    registry = first;
    parts.shift();
  }
  if (registry === "index.docker.io" || registry === DOCKER_HUB_API_HOST) registry = DOCKER_HUB;
  if (parts.length === 0 || parts.some((p) => !COMPONENT.test(p))) {
    throw invalid(input, "repository names are lower-case letters, digits and separators (. _ __ -) between slashes");
  }
  if (registry === DOCKER_HUB && parts.length === 1) parts.unshift("library");
  return { registry, repository: parts.join("/"), tag: digest ? tag : (tag ?? "latest"), digest };
}

/** The reference as one string, e.g. `docker.io/library/python:3.12-slim`. */
export function formatImageReference(ref: ImageReference): string {
  return `${ref.registry}/${ref.repository}${ref.tag ? `:${ref.tag}` : ""}${ref.digest ? `@${ref.digest}` : ""}`;
}
