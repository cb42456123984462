import { randomBytes } from "node:crypto";

const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

/** A random id of [a-z0-9] (the E2B id alphabet: host routing splits on '-', so ids never contain one). */
export function randomId(length = 20): string {
  const bytes = randomBytes(length);
  let id = "";
  for (const byte of bytes) id += ALPHABET[byte % ALPHABET.length];
  return id;
}
