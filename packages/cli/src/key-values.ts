import { usageError } from "./command.js";

/** Parse repeated `k=v` flags into a record. */
export function parseKeyValues(values: readonly string[] | undefined, flag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of values ?? []) {
    const eq = item.indexOf("=");
    if (eq <= 0) throw usageError(`--${flag} expects key=value, got '${item}'`);
    out[item.slice(0, eq)] = item.slice(eq + 1);
  }
  return out;
}

/**
 * The `metadata` query parameter of E2B's list endpoints: each key and value URL-encoded, joined as a query
 * string (which the URL encodes once more), as the e2b SDK sends it. Undefined when there is no filter.
 */
export function metadataQuery(metadata: Record<string, string>): string | undefined {
  const pairs = Object.entries(metadata).map(([key, value]): [string, string] => [encodeURIComponent(key), encodeURIComponent(value)]);
  return pairs.length === 0 ? undefined : new URLSearchParams(pairs).toString();
}
