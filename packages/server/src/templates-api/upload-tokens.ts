// The SDK PUTs COPY contexts to the URL the files check returned, without the API key (it is built for
// presigned storage URLs). So that URL carries a single-purpose token: it allows one upload of one hash,
// and expires.
import { randomBytes } from "node:crypto";

const TOKEN_TTL_MS = 60 * 60 * 1000;
const MAX_TOKENS = 10_000;

export class UploadTokens {
  private readonly tokens = new Map<string, { hash: string; expiresAt: number }>();

  issue(hash: string): string {
    this.prune();
    const token = randomBytes(24).toString("hex");
    this.tokens.set(token, { hash, expiresAt: Date.now() + TOKEN_TTL_MS });
    return token;
  }

  /** True when `token` was issued for `hash` and has not expired; it stays valid for retries until it expires. */
  check(token: string | undefined, hash: string): boolean {
    // 192 random bits: a map lookup leaks nothing a guess could use.
    const grant = token ? this.tokens.get(token) : undefined;
    return grant !== undefined && grant.hash === hash && grant.expiresAt > Date.now();
  }

  private prune(): void {
    const now = Date.now();
    for (const [token, grant] of this.tokens) if (grant.expiresAt <= now) this.tokens.delete(token);
    while (this.tokens.size >= MAX_TOKENS) {
      const oldest = this.tokens.keys().next().value;
      if (oldest === undefined) break;
      this.tokens.delete(oldest);
    }
  }
}
