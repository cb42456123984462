// The launcher's answer, as it arrives through burrow-reaper: one JSON line, either the sandbox it started
// (`{"pid":N,"owner":U,"uidBase":B}`) or the step that failed (`{"error":"…","step":"…"}`; the reaper's own
// refusals use the same shape, with steps `reaper-request` and `reaper-exec`). This is the only place it is read.
import { LaunchError, type LaunchErrorCode } from "./launch-error.js";

export type LaunchReport =
  | { ok: true; pid: number; owner: number; uidBase: number | undefined }
  | { ok: false; step: string; message: string };

function codeForStep(step: string): LaunchErrorCode {
  if (step === "args") return "invalid_argument";
  if (step === "exec") return "exec_failed";
  if (step === "reaper-exec") return "binary_missing";
  if (step === "reaper-request") return "reaper_unavailable";
  return "setup_failed";
}

/** Read the report from everything the launcher printed (its last non-empty line); anything else is bad_output. */
export function parseLaunchReport(output: string): LaunchReport {
  const line = output.trim().split("\n").pop() ?? "";
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch (cause) {
    throw new LaunchError("bad_output", `the launcher printed ${JSON.stringify(output)}`, { cause });
  }
  if (typeof parsed !== "object" || parsed === null) {
    throw new LaunchError("bad_output", `the launcher printed ${JSON.stringify(output)}`);
  }
  const { pid, owner, uidBase, error, step } = parsed as Record<string, unknown>;
  if (Number.isSafeInteger(pid) && (pid as number) > 0) {
    return {
      ok: true,
      pid: pid as number,
      owner: Number.isSafeInteger(owner) ? (owner as number) : 0,
      uidBase: Number.isSafeInteger(uidBase) ? (uidBase as number) : undefined,
    };
  }
  if (typeof error === "string" && typeof step === "string") return { ok: false, step, message: error };
  throw new LaunchError("bad_output", `the launcher printed ${JSON.stringify(output)}`);
}

/** The typed error of a failed report. */
export function launchFailure(report: { step: string; message: string }): LaunchError {
  return new LaunchError(codeForStep(report.step), `${report.step}: ${report.message}`, { step: report.step });
}
