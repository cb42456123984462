// What a build carries from step to step (user, workdir, env, build args) and the chain key that makes the
// layer cache content-addressed: every step hashes its parent key, its own inputs and the state it runs in,
// so an unchanged prefix of steps maps to the same keys and reuses the same layers.
import { createHash, randomBytes } from "node:crypto";
import type { BuildStep } from "./build-spec.js";

export interface BuildState {
  user: string;
  workdir?: string | undefined;
  /** ENV values: persisted into the template. */
  env: Record<string, string>;
  /** ARG values: visible to later RUN steps only. */
  args: Record<string, string>;
}

/** Bump when the meaning of a step changes, so old cached layers are no longer picked up. */
const KEY_VERSION = "burrow-layer-v1";

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** Key of the chain before any step: the base's own identity (its layers), plus a nonce for forced builds. */
export function baseKey(baseIdentity: string, force: boolean): string {
  return sha256(JSON.stringify([KEY_VERSION, "base", baseIdentity, force ? randomBytes(16).toString("hex") : ""]));
}

/**
 * Key after `step` runs on `parentKey` in `state` (state as it is before the step applies). A COPY step also
 * passes the digest of its upload's bytes: the files hash is computed by the client and proves nothing alone.
 */
export function stepKey(parentKey: string, step: BuildStep, state: BuildState, contentDigest?: string): string {
  const sorted = (record: Record<string, string>) => Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return sha256(
    JSON.stringify([
      KEY_VERSION,
      parentKey,
      step.type,
      step.args,
      step.filesHash ?? "",
      state.user,
      state.workdir ?? "",
      sorted(state.env),
      sorted(state.args),
      // force: this step (and, through the chain, every later one) misses the cache.
      step.force ? randomBytes(16).toString("hex") : "",
      ...(contentDigest !== undefined ? [contentDigest] : []),
    ]),
  );
}

/** Layer id for a chain key: short enough to keep overlay's lowerdir option (one page) roomy. */
export function layerIdForKey(key: string): string {
  return `l${key.slice(0, 39)}`;
}

/** Apply a state-only step (WORKDIR, USER, ENV, ARG). Returns the state after it. */
export function applyStateStep(state: BuildState, step: BuildStep): BuildState {
  const pairs = (args: string[]) => {
    const out: Record<string, string> = {};
    for (let i = 0; i + 1 < args.length; i += 2) out[args[i] as string] = expandVars(args[i + 1] as string, state);
    return out;
  };
  switch (step.type) {
    case "WORKDIR":
      return { ...state, workdir: resolveWorkdir(state.workdir, expandVars(step.args[0] ?? "/", state)) };
    case "USER":
      return { ...state, user: expandVars(step.args[0] ?? "root", state) };
    case "ENV":
      return { ...state, env: { ...state.env, ...pairs(step.args) } };
    case "ARG":
      return { ...state, args: { ...state.args, ...pairs(step.args) } };
    default:
      return state;
  }
}

/** WORKDIR relative to the current one, like Docker. */
export function resolveWorkdir(current: string | undefined, next: string): string {
  if (next.startsWith("/")) return normalizePosix(next);
  return normalizePosix(`${current ?? "/"}/${next}`);
}

export function normalizePosix(path: string): string {
  const parts: string[] = [];
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") parts.pop();
    else parts.push(part);
  }
  return `/${parts.join("/")}`;
}

/** `$VAR` / `${VAR}` from ENV and ARG values (Docker expands these in WORKDIR, USER, ENV, COPY dest). */
export function expandVars(text: string, state: BuildState): string {
  const lookup = (name: string) => state.env[name] ?? state.args[name] ?? "";
  return text.replace(/\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))/g, (_m, braced?: string, bare?: string) =>
    lookup((braced ?? bare) as string),
  );
}

/** Environment a RUN step sees: build args first, ENV wins (Docker's precedence). */
export function runEnv(state: BuildState): Record<string, string> {
  return { ...state.args, ...state.env };
}
