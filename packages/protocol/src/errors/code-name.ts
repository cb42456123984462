import { Code } from "@connectrpc/connect";

/** A code's name as Connect writes it on the wire and in logs: `Code.NotFound` → `"not_found"`. */
export function codeName(code: Code): string {
  const name = Code[code];
  if (typeof name !== "string") return "unknown";
  return name.replace(/[A-Z]/g, (c, at: number) => (at === 0 ? c.toLowerCase() : `_${c.toLowerCase()}`));
}
