import { BurrowError, Code } from "@burrow/protocol";

// NATS subject grammar: dot-separated non-empty tokens without whitespace; `*` matches one token, `>` the rest.
const badToken = /[\s]/;

/** Throws InvalidArgument unless `s` is a valid subject (wildcards only when `allowWildcards`). */
export function assertSubject(s: string, allowWildcards: boolean): string[] {
  if (typeof s !== "string" || s.length === 0) throw new BurrowError(Code.InvalidArgument, "subject must be a non-empty string");
  const tokens = s.split(".");
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.length === 0 || badToken.test(t)) throw new BurrowError(Code.InvalidArgument, `invalid subject "${s}"`);
    if (t === "*" || t === ">") {
      if (!allowWildcards) throw new BurrowError(Code.InvalidArgument, `wildcards are not allowed in "${s}"`);
      if (t === ">" && i !== tokens.length - 1) throw new BurrowError(Code.InvalidArgument, `">" must be last in "${s}"`);
    } else if (t.includes("*") || t.includes(">")) {
      throw new BurrowError(Code.InvalidArgument, `wildcards must be whole tokens in "${s}"`);
    }
  }
  return tokens;
}

// Hot publishers reuse a few subjects; remembering ones already validated keeps the publish path cheap.
const validLiteral = new Set<string>();

/** assertSubject for a literal subject (no wildcards), memoised. */
export function assertLiteralSubject(s: string): void {
  if (validLiteral.has(s)) return;
  assertSubject(s, false);
  if (validLiteral.size >= 10_000) validLiteral.clear();
  validLiteral.add(s);
}

/** True when the subject tokens match the pattern tokens. */
export function matchTokens(pattern: readonly string[], subject: readonly string[]): boolean {
  const n = pattern.length;
  for (let i = 0; i < n; i++) {
    const p = pattern[i]!;
    if (p === ">") return subject.length > i;
    if (i >= subject.length) return false;
    if (p !== "*" && p !== subject[i]) return false;
  }
  return subject.length === n;
}

export function matchSubject(pattern: string, subject: string): boolean {
  return matchTokens(pattern.split("."), subject.split("."));
}

/**
 * Escape an arbitrary string into one subject token: `.`, wildcards, whitespace and `%` become `%XX`,
 * so ids that contain them can never widen a subscription or split a token.
 */
export function encodeToken(s: string): string {
  if (s.length === 0) return "%00";
  return s.replace(/[.*>%\s]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0"));
}

export function decodeToken(t: string): string {
  if (t === "%00") return "";
  return t.replace(/%([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
}
