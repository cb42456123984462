import { CliError } from "./cli-error.js";

/** Parse repeated `k=v` flags into a record. */
export function parseKeyValues(values: string[] | undefined, flag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of values ?? []) {
    const eq = item.indexOf("=");
    if (eq <= 0) throw new CliError(`--${flag} expects key=value, got '${item}'`, 2);
    out[item.slice(0, eq)] = item.slice(eq + 1);
  }
  return out;
}
