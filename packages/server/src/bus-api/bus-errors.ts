import { BurrowError, Code } from "@burrow/protocol";

/**
 * Subjects that REST clients may not touch: `$…` (JetStream API, advisories, system) and `_INBOX…` (other
 * clients' replies), and patterns starting with a wildcard, which would cover those.
 */
export function assertClientSubject(subject: string, pattern: boolean): void {
  const first = subject.split(".")[0] ?? "";
  if (first.startsWith("$") || first.startsWith("_INBOX") || (pattern && (first === "*" || first === ">"))) {
    throw new BurrowError(Code.PermissionDenied, `subject "${subject}" is reserved`);
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Message bodies on the wire: base64 always, and `data` as text when the bytes are valid UTF-8. */
export function encodeBody(b: Uint8Array): { dataBase64: string; data?: string } {
  const dataBase64 = Buffer.from(b).toString("base64");
  try {
    return { dataBase64, data: utf8.decode(b) };
  } catch {
    return { dataBase64 };
  }
}

export function decodeBody(body: { data?: string; dataBase64?: string }): Uint8Array {
  if (body.dataBase64 !== undefined) return new Uint8Array(Buffer.from(body.dataBase64, "base64"));
  return new TextEncoder().encode(body.data ?? "");
}

export const bodyProps = {
  data: { type: "string" },
  dataBase64: { type: "string", maxLength: 1_500_000 },
  headers: { type: "object", additionalProperties: { type: "string" } },
} as const;
