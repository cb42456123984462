// The SDK PUTs COPY contexts to the URL the files check returned, without the API key (it is built for
// presigned storage URLs). So that URL carries a single-purpose token: it allows one upload of one hash for
// one template, is spent by that upload, and expires.
import { randomBytes } from "node:crypto";

const TOKEN_TTL_MS = 60 * 60 * 1000;
const MAX_TOKENS = 10_000;

interface Grant {
  templateId: string;
  hash: string;
  expiresAt: number;
}

export class UploadTokens {
  private readonly tokens = new Map<string, Grant>();

  issue(templateId: string, hash: string): string {
    this.prune();
    const token = randomBytes(24).toString("hex");
    this.tokens.set(token, { templateId, hash, expiresAt: Date.now() + TOKEN_TTL_MS });
    return token;
  }

  /** True when `token` was issued for this template and hash and has neither expired nor been spent. */
  check(token: string | undefined, templateId: string, hash: string): boolean {
    // 192 random bits: a map lookup leaks nothing a guess could use.
    const grant = token ? this.tokens.get(token) : undefined;
    return grant !== undefined && grant.templateId === templateId && grant.hash === hash && grant.expiresAt > Date.now();
  }

  /** Spend a token: an upload starts with it, so no second request can use it, even concurrently. */
  spend(token: string): void {
    this.tokens.delete(token);
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
