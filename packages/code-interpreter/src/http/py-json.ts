// JSON exactly as Python's json.dumps writes it by default (", " and ": " separators, non-ASCII as \uXXXX), the
// form E2B's server streams. Clients only parse it, but byte-for-byte equal output keeps diffing easy.

function asciiOnly(json: string): string {
  return json.replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

export function pyJson(value: unknown): string {
  if (value === null || value === undefined) return "null";
  switch (typeof value) {
    case "string":
      return asciiOnly(JSON.stringify(value));
    case "number":
      return Number.isFinite(value) ? JSON.stringify(value) : "null";
    case "boolean":
      return value ? "true" : "false";
    case "object":
      if (Array.isArray(value)) return `[${value.map(pyJson).join(", ")}]`;
      return `{${Object.entries(value)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => `${asciiOnly(JSON.stringify(k))}: ${pyJson(v)}`)
        .join(", ")}}`;
    default:
      return "null";
  }
}
