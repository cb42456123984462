/** Stable codes for network failures; callers branch on `code`, never on the message. */
export type NetworkErrorCode =
  | "invalid_argument" // bad instance, subnet, bridge name or pid
  | "subnet_conflict" // the sandbox subnet overlaps a host address or route
  | "exhausted" // no free address left in the subnet
  | "not_set_up" // attach before setup()
  | "command_failed" // ip, nft or nsenter exited non-zero
  | "aborted";

export class NetworkError extends Error {
  override readonly name = "NetworkError";
  readonly code: NetworkErrorCode;

  constructor(code: NetworkErrorCode, message: string, options?: { cause?: unknown }) {
    super(`[${code}] ${message}`, options);
    this.code = code;
  }
}
