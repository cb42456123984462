import { BurrowError, Code } from "@burrow/protocol";
// Groups of positive integer settings (rates, windows, byte caps) resolved the same way everywhere in the server's
// config: a given value, then the environment variable named for it, then the default.

/**
 * Given values, then the environment, then the defaults; a bad value is an InvalidArgument naming it (the variable
 * and its text when it came from the environment). `env` is the one the process's entry point passed to the
 * server's config resolver, which resolves these once. A key without an environment name is settable only in code.
 */
export function resolvePositiveLimits<T extends { [K in keyof T]: number }>(
  defaults: T,
  envNames: Partial<Record<keyof T, string>>,
  input: Partial<T> = {},
  env: NodeJS.ProcessEnv = {},
): T {
  const out = { ...defaults };
  for (const key of Object.keys(defaults) as Array<keyof T>) {
    const name = envNames[key];
    const raw = name === undefined ? undefined : env[name];
    const fromEnv = raw !== undefined && raw !== "";
    const value = input[key] ?? (fromEnv ? Number(raw) : undefined);
    if (value === undefined) continue;
    if (!Number.isSafeInteger(value) || value <= 0) {
      const what = input[key] === undefined ? `${name} ("${raw}")` : `${String(key)} (${value})`;
      throw new BurrowError(Code.InvalidArgument, `${what} must be a positive integer`);
    }
    out[key] = value as T[keyof T];
  }
  return out;
}
