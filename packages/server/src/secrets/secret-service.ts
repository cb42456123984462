// Secrets as E2B serves them: write-only values (sealed on the way in, never answered), metadata readable, one
// version counter per secret. Values leave this module only through resolveSecretPlaceholders, for egress.
import { randomBytes } from "node:crypto";
import { BurrowError, Code } from "@burrow/protocol";
import type { SecretCipher } from "./secret-cipher.js";
import { canonicalSecretName, checkSecretMetadata, checkSecretValue, SECRET_ID_PREFIX } from "./secret-input.js";
import type { SecretOwner } from "./secret-owner.js";
import type { SecretRow, SecretStore } from "./secret-store.js";

/** A secret as callers see it: never the value. */
export interface SecretInfo {
  secretId: string;
  name: string;
  version: number;
  metadata: Record<string, string>;
  createdAt: Date;
  updatedAt: Date;
}

export interface SecretPage {
  secrets: SecretInfo[];
  /** Cursor of the next page; undefined on the last. */
  nextToken: string | undefined;
}

export const DEFAULT_SECRET_PAGE = 100;
export const MAX_SECRET_PAGE = 100;

/** `${e2b.secrets.<name>}`, the placeholder E2B's SDK writes (Secret.fill). */
const PLACEHOLDER = /\$\{e2b\.secrets\.([^{}\p{Cc}]+)\}/gu;

function info(row: SecretRow): SecretInfo {
  return { secretId: row.secretId, name: row.name, version: row.version, metadata: row.metadata, createdAt: row.createdAt, updatedAt: row.updatedAt };
}

function notFound(ref: string): BurrowError {
  return new BurrowError(Code.NotFound, `secret ${JSON.stringify(ref)} not found`, { reason: "secret_not_found" });
}

function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === "SQLITE_CONSTRAINT_UNIQUE";
}

function encodeCursor(seq: number): string {
  return Buffer.from(`s${seq}`, "utf8").toString("base64url");
}

function decodeCursor(token: string): number {
  const text = Buffer.from(token, "base64url").toString("utf8");
  const seq = /^s(\d{1,15})$/.exec(text)?.[1];
  if (seq === undefined) throw new BurrowError(Code.InvalidArgument, "nextToken is not a token this server issued", { reason: "secret_invalid" });
  return Number(seq);
}

export class SecretService {
  readonly #store: SecretStore;
  readonly #cipher: SecretCipher;

  constructor(store: SecretStore, cipher: SecretCipher) {
    this.#store = store;
    this.#cipher = cipher;
  }

  create(owner: SecretOwner, input: { name: string; value: string; metadata?: Record<string, string> | undefined }, now = new Date()): SecretInfo {
    const name = canonicalSecretName(input.name);
    checkSecretValue(input.value);
    const metadata = input.metadata ?? {};
    checkSecretMetadata(metadata);
    const secretId = `${SECRET_ID_PREFIX}${randomBytes(12).toString("hex")}`;
    try {
      return info(this.#store.insert(owner, { secretId, name, metadata, sealedValue: this.#cipher.seal(input.value, secretId), now }));
    } catch (err) {
      if (isUniqueViolation(err)) throw new BurrowError(Code.AlreadyExists, `secret ${JSON.stringify(name)} already exists`, { reason: "secret_exists" });
      throw err;
    }
  }

  /** A secret by id (`sec_…`) or name (any case). */
  get(owner: SecretOwner, ref: string): SecretInfo {
    return info(this.#require(owner, ref));
  }

  list(owner: SecretOwner, opts: { limit?: number | undefined; nextToken?: string | undefined } = {}): SecretPage {
    const limit = opts.limit ?? DEFAULT_SECRET_PAGE;
    const after = opts.nextToken ? decodeCursor(opts.nextToken) : 0;
    // One row more than asked says whether another page exists without a second query.
    const rows = this.#store.page(owner, after, limit + 1);
    const more = rows.length > limit;
    const shown = more ? rows.slice(0, limit) : rows;
    return { secrets: shown.map(info), nextToken: more ? encodeCursor(shown[shown.length - 1]!.seq) : undefined };
  }

  /** A new value (the next version); metadata is replaced when given, kept when not. */
  update(owner: SecretOwner, ref: string, input: { value: string; metadata?: Record<string, string> | undefined }, now = new Date()): SecretInfo {
    checkSecretValue(input.value);
    if (input.metadata !== undefined) checkSecretMetadata(input.metadata);
    const row = this.#require(owner, ref);
    if (!this.#store.update(owner, row.secretId, this.#cipher.seal(input.value, row.secretId), input.metadata, now)) throw notFound(ref);
    return this.get(owner, row.secretId);
  }

  delete(owner: SecretOwner, ref: string): void {
    const row = this.#require(owner, ref);
    if (!this.#store.delete(owner, row.secretId)) throw notFound(ref);
  }

  /**
   * Replace every `${e2b.secrets.NAME}` in `text` with the current value of the owner's secret NAME (names match in
   * any case). For egress header transforms and provider keys: the result must go to the upstream only, never back to
   * a sandbox or a client. An unknown name is a NotFound (reason secret_not_found) naming it.
   */
  resolveSecretPlaceholders(text: string, owner: SecretOwner): string {
    return text.replace(PLACEHOLDER, (_match, name: string) => this.value(owner, name));
  }

  /** Whether the owner has a secret named `name` (any case); nothing is opened. */
  hasName(owner: SecretOwner, name: string): boolean {
    return this.#store.byName(owner, name.toLowerCase()) !== undefined;
  }

  /** The plaintext value of the owner's secret `name`; for server-side injection only. */
  value(owner: SecretOwner, name: string): string {
    const row = this.#store.byName(owner, name.toLowerCase());
    if (!row) throw notFound(name);
    return this.#cipher.open(row.sealedValue, row.secretId);
  }

  /**
   * Seal a credential held elsewhere (a model provider's literal key) under the secrets key, bound to `context` (the
   * same context must open it).
   */
  sealCredential(plaintext: string, context: string): Buffer {
    return this.#cipher.seal(plaintext, context);
  }

  openCredential(sealed: Buffer, context: string): string {
    return this.#cipher.open(sealed, context);
  }

  #require(owner: SecretOwner, ref: string): SecretRow {
    const row = ref.startsWith(SECRET_ID_PREFIX) ? this.#store.byId(owner, ref) : this.#store.byName(owner, ref.toLowerCase());
    if (!row) throw notFound(ref);
    return row;
  }
}
