/** Stable codes for rootfs build failures; callers branch on `code`, never on the message. */
export type RootfsErrorCode =
  | "no_mirror" // no Debian mirror found in the machine's apt sources
  | "already_exists" // outDir is already there; layers are immutable, so we never overwrite one
  | "command_failed" // debootstrap, tar or the chroot setup exited non-zero
  | "unmappable_owner" // a file's uid/gid does not fit in the sandbox uid range
  | "aborted";

export class RootfsError extends Error {
  override readonly name = "RootfsError";
  readonly code: RootfsErrorCode;

  constructor(code: RootfsErrorCode, message: string, options?: { cause?: unknown }) {
    super(`[${code}] ${message}`, options);
    this.code = code;
  }
}
