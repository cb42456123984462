// Metadata typed as "a=1, b=2": the pairs, or null when a pair has no "=" or an empty key.
export function metadataPairs(text: string): [string, string][] | null {
  const pairs = text
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean)
    .map((p) => {
      const eq = p.indexOf("=");
      return eq < 0 ? null : ([p.slice(0, eq).trim(), p.slice(eq + 1).trim()] as [string, string]);
    });
  return pairs.every((p): p is [string, string] => p !== null && p[0] !== "") ? pairs : null;
}

/** The list endpoint's metadata query (percent-encoded pairs joined like a query string), "" for no filter. */
export function metadataQuery(text: string): string | null {
  const pairs = metadataPairs(text);
  return pairs === null ? null : new URLSearchParams(pairs).toString();
}
