// AES-256-GCM for secret values. Each value gets a fresh 96-bit nonce; the secret's id is the additional data, so a
// ciphertext copied onto another row fails to decrypt instead of answering for the wrong secret.
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { BurrowError, Code } from "@burrow/protocol";

const NONCE_BYTES = 12;
const TAG_BYTES = 16;
/** Stored layout: version byte, nonce, tag, ciphertext. The version byte leaves room for a key rotation. */
const FORMAT_V1 = 1;

export class SecretCipher {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    this.#key = key;
  }

  seal(plaintext: string, secretId: string): Buffer {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.#key, nonce);
    cipher.setAAD(Buffer.from(secretId, "utf8"));
    const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
    return Buffer.concat([Buffer.of(FORMAT_V1), nonce, cipher.getAuthTag(), body]);
  }

  open(sealed: Buffer, secretId: string): string {
    if (sealed.length < 1 + NONCE_BYTES + TAG_BYTES || sealed[0] !== FORMAT_V1) throw undecryptable(secretId);
    const nonce = sealed.subarray(1, 1 + NONCE_BYTES);
    const tag = sealed.subarray(1 + NONCE_BYTES, 1 + NONCE_BYTES + TAG_BYTES);
    const decipher = createDecipheriv("aes-256-gcm", this.#key, nonce);
    decipher.setAAD(Buffer.from(secretId, "utf8"));
    decipher.setAuthTag(tag);
    try {
      return Buffer.concat([decipher.update(sealed.subarray(1 + NONCE_BYTES + TAG_BYTES)), decipher.final()]).toString("utf8");
    } catch {
      throw undecryptable(secretId);
    }
  }
}

// The usual cause is a secrets.key that is not the one the value was written with (a restored database).
function undecryptable(secretId: string): BurrowError {
  return new BurrowError(Code.DataLoss, `secret ${secretId} cannot be decrypted with this server's secrets.key`, { reason: "secret_undecryptable" });
}
