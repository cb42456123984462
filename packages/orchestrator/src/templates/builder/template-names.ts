// E2B template names: `name` or `name:tag`, with tags naming builds. A bare name means the `default` tag (and
// `name:default` the bare name); every other tag, `latest` included, is an ordinary tag that names a build only
// once it is assigned. A tag cannot be a UUID: `name:<build id>` names that build (build ids are UUIDs).
import { Code } from "@burrow/protocol";
import { isUuid } from "../build-ids.js";
import { TemplateBuildError } from "./template-build-error.js";

export const DEFAULT_TAG = "default";
const NAME = /^[a-z0-9][a-z0-9._/-]{0,127}$/;
const TAG = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export function parseTemplateName(input: string): { name: string; tag?: string | undefined } {
  const [name = "", tag] = input.split(":", 2);
  if (!NAME.test(name)) {
    throw new TemplateBuildError(Code.InvalidArgument, `invalid template name '${name}': use lowercase letters, digits, '.', '_', '-' and '/'`);
  }
  if (tag !== undefined) checkTag(tag);
  return { name, tag };
}

/** A tag as given, when it is one a build may carry. */
export function checkTag(tag: string): string {
  if (!TAG.test(tag)) throw new TemplateBuildError(Code.InvalidArgument, `invalid tag '${tag}'`);
  if (isUuid(tag)) throw new TemplateBuildError(Code.InvalidArgument, `invalid tag '${tag}': a tag cannot be a UUID (a UUID after ':' names a build)`);
  return tag;
}
