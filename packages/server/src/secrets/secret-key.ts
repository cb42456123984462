// The key that encrypts secret values at rest: 32 random bytes in `<stateDir>/secrets.key`, readable by root only,
// created on the first start. It lives beside burrow.db but in a file of its own, so a copy of the database alone
// (a backup, a bug report) reveals no value.
import { randomBytes } from "node:crypto";
import { chmodSync, closeSync, openSync, readFileSync, statSync, writeSync, constants } from "node:fs";
import { join } from "node:path";
import { BurrowError, Code } from "@burrow/protocol";

export const SECRETS_KEY_FILE = "secrets.key";
const KEY_BYTES = 32;

/** Read the state directory's secrets key, creating it (0600, exclusive create) when it does not exist yet. */
export function loadOrCreateSecretsKey(stateDir: string): Buffer {
  const file = join(stateDir, SECRETS_KEY_FILE);
  try {
    // O_EXCL: two servers starting on one state directory cannot both write a key and lose each other's secrets.
    const fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
    try {
      writeSync(fd, `${randomBytes(KEY_BYTES).toString("base64")}\n`);
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  }
  // A key someone copied in with a broad mode is narrowed rather than refused: the values it guards are what matter.
  if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  const key = Buffer.from(readFileSync(file, "utf8").trim(), "base64");
  if (key.length !== KEY_BYTES) {
    throw new BurrowError(Code.FailedPrecondition, `${file} does not hold a ${KEY_BYTES}-byte base64 key`, { reason: "secrets_key_invalid" });
  }
  return key;
}
