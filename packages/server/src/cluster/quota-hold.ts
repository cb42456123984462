// A create placed on another node carries the id of the quota hold its placing node took (team-ledger.ts), so that the
// node making it replaces that hold with its own in one write instead of counting the create twice. Honoured only on
// a request another node forwarded (its signed mark verified: forwarded-header.ts); a client's is removed unread.
import { isForwarded } from "./forwarded-header.js";

export const QUOTA_HOLD_HEADER = "x-burrow-quota-hold";

/** The hold a node handed over with this request, if a node forwarded it; the header is gone afterwards. */
export function takeHandedHold(headers: Record<string, string | string[] | undefined>): string | undefined {
  const value = headers[QUOTA_HOLD_HEADER];
  delete headers[QUOTA_HOLD_HEADER];
  return isForwarded(headers) && typeof value === "string" && /^[0-9a-f]{1,64}$/.test(value) ? value : undefined;
}
