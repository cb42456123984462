// Volume tokens (the content API's bearer credential). E2B hands the token out again on every GET /volumes/{id},
// so it cannot be stored only as a hash; instead nothing is stored: a token is an HMAC of the volume's id and a
// random salt of its own under a key kept in <stateDir>/volume-tokens.key (root's only), recomputed when needed and
// compared in constant time. The database alone never yields a usable token.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const KEY_FILE = "volume-tokens.key";
const KEY_BYTES = 32;

export class VolumeTokens {
  readonly #key: Buffer;

  private constructor(key: Buffer) {
    this.#key = key;
  }

  /** The key of this state directory, made on first use. */
  static open(stateDir: string): VolumeTokens {
    const file = join(stateDir, KEY_FILE);
    try {
      const key = readFileSync(file);
      if (key.length === KEY_BYTES) return new VolumeTokens(key);
      throw new Error(`${file} holds ${key.length} bytes, not ${KEY_BYTES}`);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
    const key = randomBytes(KEY_BYTES);
    // wx: two servers starting on one state directory at once must not end up with different keys.
    try {
      writeFileSync(file, key, { mode: 0o600, flag: "wx" });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EEXIST") return VolumeTokens.open(stateDir);
      throw error;
    }
    return new VolumeTokens(key);
  }

  static newSalt(): string {
    return randomBytes(16).toString("hex");
  }

  tokenOf(volumeId: string, salt: string): string {
    return `vol_${createHmac("sha256", this.#key).update(`${volumeId}\0${salt}`).digest("base64url")}`;
  }

  matches(volumeId: string, salt: string, presented: string): boolean {
    const expected = Buffer.from(this.tokenOf(volumeId, salt));
    const given = Buffer.from(presented);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}
