// E2B's workload identity (`iam.tokens` on create, `${e2b.identity.tokens.NAME}` in header transforms): E2B mints a
// token per request at its egress, for the audience and token type asked for. What such a token is (its issuer, how
// it is signed, its claims, how a cloud verifies it) is not part of E2B's contract, so Burrow cannot mint one a cloud
// would accept, and it says so with a 400 instead of creating a sandbox whose requests would fail at the
// destination. Credentials go in as secrets (`${e2b.secrets.NAME}`) instead.
import { BurrowError, Code } from "@burrow/protocol";

export const IDENTITY_TOKENS_UNSUPPORTED =
  "workload identity tokens (E2B's iam.tokens and ${e2b.identity.tokens.NAME}) are not supported by Burrow: E2B does not specify how they are issued or signed, so Burrow cannot mint tokens a cloud would accept; put the credential in a secret and use ${e2b.secrets.NAME}";

/** 400 when a create asks for workload identity tokens (a non-empty iam.tokens). */
export function refuseIdentityTokens(iam: { tokens?: Record<string, unknown> | null } | null | undefined): void {
  const names = Object.keys(iam?.tokens ?? {});
  if (names.length === 0) return;
  throw new BurrowError(Code.InvalidArgument, `iam.tokens '${names[0]}': ${IDENTITY_TOKENS_UNSUPPORTED}`, { reason: "identity_tokens_unsupported" });
}
