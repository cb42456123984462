// Gives a running sandbox a new root filesystem: the launcher's --swap-root mode (native/swap.c) mounts the overlay
// of `lower` over the sandbox's own upper and work, as a launch would, and pivots the sandbox's mount namespace into
// it, so its running init and envd continue in the new root. A prepared sandbox (launched before its template was
// known) becomes a sandbox of the template a create names.
import { runLauncherMode, targetArgs, type RunningSandboxTarget } from "./launcher-mode.js";

export interface SwapRootOptions extends RunningSandboxTarget {
  /** Read-only layers, top first; the writable layer, its work dir (siblings) and a mount point on the host. */
  lower: readonly string[];
  upper: string;
  work: string;
  merged: string;
}

export function swapRootArgs(o: SwapRootOptions): string[] {
  const args = targetArgs("swap-root", o);
  for (const layer of o.lower) args.push("--lower", layer);
  args.push("--upper", o.upper, "--work", o.work, "--merged", o.merged);
  return args;
}

/** Resolves once the sandbox runs in the new root; rejects (reason root_swap_failed) with the step that failed. */
export async function swapRoot(o: SwapRootOptions, signal?: AbortSignal): Promise<void> {
  await runLauncherMode(o.reaper, swapRootArgs(o), {
    what: `swapping the root of sandbox init ${o.pid}`,
    reason: "root_swap_failed",
    succeeded: (answer) => answer.swapped === true,
    signal,
  });
}
