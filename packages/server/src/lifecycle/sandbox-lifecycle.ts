// E2B's lifecycle of a sandbox, chosen once at create and never changed by connect (E2B's bug #875 was connect
// resetting it): what its timeout does (kill, or pause with or without memory) and whether traffic resumes it.
// The SDK's `lifecycle: {onTimeout, autoResume}` arrives as the create fields autoPause, autoPauseMemory and
// autoResume.enabled.
import { BurrowError, Code } from "@burrow/protocol";
import type { PauseKind } from "@burrow/orchestrator";

export interface SandboxLifecycle {
  /** At its timeout the sandbox is paused instead of killed. */
  readonly autoPause: boolean;
  /** …with its memory (true) or as a filesystem pause (false: processes end, resume cold-boots). */
  readonly autoPauseMemory: boolean;
  /**
   * A paused sandbox is resumed by the first request routed to it. As in E2B it applies to every memory pause, the
   * timeout's or an explicit one; filesystem pauses are never resumed by traffic (connect resumes them).
   */
  readonly autoResume: boolean;
}

/** E2B's defaults: killed at its timeout, no auto-resume. */
export const DEFAULT_LIFECYCLE: SandboxLifecycle = Object.freeze({ autoPause: false, autoPauseMemory: true, autoResume: false });

/** The create body's lifecycle fields, their JSON types already checked by the route's schema. */
export interface LifecycleFields {
  autoPause?: boolean | undefined;
  autoPauseMemory?: boolean | undefined;
  autoResume?: { enabled?: boolean | undefined } | undefined;
}

/** The lifecycle a create asks for; the combinations E2B refuses are InvalidArgument (400) with its reasons. */
export function lifecycleFromCreate(fields: LifecycleFields): SandboxLifecycle {
  const autoPause = fields.autoPause ?? false;
  const autoPauseMemory = fields.autoPauseMemory ?? true;
  const autoResume = fields.autoResume?.enabled ?? false;
  if (!autoPauseMemory && !autoPause) {
    throw new BurrowError(Code.InvalidArgument, "autoPauseMemory=false only applies when autoPause is true.");
  }
  if (!autoPauseMemory && autoResume) {
    throw new BurrowError(
      Code.InvalidArgument,
      "autoPauseMemory=false makes the timeout's pause a filesystem-only one, which cannot be auto-resumed by traffic " +
        "and must be resumed explicitly (connect); autoResume.enabled must be false with it.",
    );
  }
  return Object.freeze({ autoPause, autoPauseMemory, autoResume });
}

/** `lifecycle` of E2B's SandboxDetail, as the SDK's getInfo reads it. */
export function lifecycleView(lifecycle: SandboxLifecycle | undefined): { onTimeout: "kill" | "pause"; autoResume: boolean } {
  const l = lifecycle ?? DEFAULT_LIFECYCLE;
  return { onTimeout: l.autoPause ? "pause" : "kill", autoResume: l.autoResume };
}

/** Whether traffic may resume a sandbox in this state: paused with memory, auto-resume on. */
export function autoResumable(row: { state: string; pauseKind?: PauseKind | null | undefined; lifecycle?: SandboxLifecycle | undefined }): boolean {
  return row.state === "paused" && (row.lifecycle?.autoResume ?? false) && (row.pauseKind ?? "memory") === "memory";
}
