// Context languages. Names are normalised as E2B's server does: trimmed, lower-cased, `js`/`ts` aliases, and an
// empty name meaning python.

export const BUILTIN_LANGUAGES = ["python", "javascript", "typescript", "bash"] as const;

const ALIASES: Record<string, string> = { js: "javascript", ts: "typescript", py: "python", sh: "bash" };

export function normalizeLanguage(language: string | undefined | null): string {
  const name = (language ?? "").trim().toLowerCase();
  if (name === "") return "python";
  return ALIASES[name] ?? name;
}
