// E2B template names: `name` or `name:tag`, with tags naming builds. `default` is what a bare name means;
// `latest` is accepted as a synonym because older SDKs and Docker habits use it.
import { TemplateBuildError } from "./template-build-error.js";

export const DEFAULT_TAG = "default";
const NAME = /^[a-z0-9][a-z0-9._/-]{0,127}$/;
const TAG = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export function parseTemplateName(input: string): { name: string; tag?: string | undefined } {
  const [name = "", tag] = input.split(":", 2);
  if (!NAME.test(name)) {
    throw new TemplateBuildError("invalid_argument", `invalid template name '${name}': use lowercase letters, digits, '.', '_', '-' and '/'`);
  }
  if (tag !== undefined) checkTag(tag);
  return { name, tag };
}

export function checkTag(tag: string): string {
  if (!TAG.test(tag)) throw new TemplateBuildError("invalid_argument", `invalid tag '${tag}'`);
  return tag === "latest" ? DEFAULT_TAG : tag;
}
