// Build ids. E2B's API declares them `format: uuid` and its Python SDK parses the ones it receives with
// `UUID(...)`, so new builds get random UUIDs. Builds made before that keep the ids they were stored under
// (manifests, tags): on the wire such an id appears as a name-based UUID derived from it, and either form
// finds the build.
import { createHash, randomUUID } from "node:crypto";

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Namespace of the UUIDs derived from pre-UUID build ids (fixed forever: changing it changes those ids). */
const LEGACY_NAMESPACE = Buffer.from("6a1c0e52c8d94e3f9b1e7f0b2d4c5a18", "hex");

export function newBuildId(): string {
  return randomUUID();
}

export function isUuid(value: string): boolean {
  return UUID_PATTERN.test(value);
}

/** The id a build has in API answers: a UUID in canonical (lowercase) form. */
export function wireBuildId(stored: string): string {
  return isUuid(stored) ? stored.toLowerCase() : legacyUuid(stored);
}

/** The stored id among `stored` that `given` names: the id itself, or the UUID shown for it on the wire. */
export function findBuildId(stored: Iterable<string>, given: string): string | undefined {
  if (!isUuid(given)) return undefined;
  const wanted = given.toLowerCase();
  for (const id of stored) if (wireBuildId(id) === wanted) return id;
  return undefined;
}

/** A version-5 (SHA-1, name-based) UUID of a pre-UUID build id (RFC 9562 §5.5). */
function legacyUuid(id: string): string {
  const bytes = createHash("sha1").update(LEGACY_NAMESPACE).update(id, "utf8").digest().subarray(0, 16);
  bytes[6] = ((bytes[6] as number) & 0x0f) | 0x50;
  bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80;
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
