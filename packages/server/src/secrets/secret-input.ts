// What a secret's name, value and metadata may be. Names are placed into `${e2b.secrets.<name>}` placeholders, so
// they cannot hold braces or control characters; `sec_` is reserved for ids, so one path segment can name either.
import { BurrowError, Code } from "@burrow/protocol";

export const SECRET_ID_PREFIX = "sec_";
const MAX_NAME_LENGTH = 256;
/** Values are credentials and tokens; 64 KiB leaves room for a certificate or a service-account JSON. */
export const MAX_VALUE_BYTES = 65_536;
// E2B's documented metadata limits.
const MAX_METADATA_ENTRIES = 32;
const MAX_METADATA_KEY_BYTES = 128;
const MAX_METADATA_VALUE_BYTES = 1024;
const MAX_METADATA_BYTES = 8192;

const INVALID_NAME_CHARS = /[{}\p{Cc}]/u;

function invalid(message: string): BurrowError {
  return new BurrowError(Code.InvalidArgument, message, { reason: "secret_invalid" });
}

/** The canonical (lower-cased) form of a valid name; 400 for a name the placeholder syntax could not carry. */
export function canonicalSecretName(name: string): string {
  if (name.length === 0) throw invalid("secret name must not be empty");
  if (name.length > MAX_NAME_LENGTH) throw invalid(`secret name is longer than ${MAX_NAME_LENGTH} characters`);
  if (INVALID_NAME_CHARS.test(name)) throw invalid(`secret name ${JSON.stringify(name)} contains '{', '}' or a control character`);
  const canonical = name.toLowerCase();
  if (canonical.startsWith(SECRET_ID_PREFIX)) throw invalid(`secret name ${JSON.stringify(name)} starts with "${SECRET_ID_PREFIX}", which is reserved for secret ids`);
  return canonical;
}

export function checkSecretValue(value: string): void {
  if (value.length === 0) throw invalid("secret value must not be empty");
  if (Buffer.byteLength(value, "utf8") > MAX_VALUE_BYTES) throw invalid(`secret value is larger than ${MAX_VALUE_BYTES} bytes`);
}

export function checkSecretMetadata(metadata: Record<string, string>): void {
  const entries = Object.entries(metadata);
  if (entries.length > MAX_METADATA_ENTRIES) throw invalid(`secret metadata has more than ${MAX_METADATA_ENTRIES} entries`);
  let total = 0;
  for (const [key, value] of entries) {
    const keyBytes = Buffer.byteLength(key, "utf8");
    const valueBytes = Buffer.byteLength(value, "utf8");
    if (keyBytes === 0 || keyBytes > MAX_METADATA_KEY_BYTES) throw invalid(`secret metadata key ${JSON.stringify(key.slice(0, 40))} must be 1-${MAX_METADATA_KEY_BYTES} bytes`);
    if (valueBytes > MAX_METADATA_VALUE_BYTES) throw invalid(`secret metadata value of ${JSON.stringify(key)} is larger than ${MAX_METADATA_VALUE_BYTES} bytes`);
    total += keyBytes + valueBytes;
  }
  if (total > MAX_METADATA_BYTES) throw invalid(`secret metadata is larger than ${MAX_METADATA_BYTES} bytes in total`);
}
