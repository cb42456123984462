// One caller's signal shared by many concurrent operations (the children of a fork or a branch). Each operation
// adds its own abort listeners; on the caller's signal, ten children are past Node's listener warning threshold
// (MaxListenersExceededWarning). They listen on a signal of ours instead, which follows the caller's through one
// listener and has no threshold.
import { setMaxListeners } from "node:events";

export interface SharedSignal {
  signal: AbortSignal | undefined;
  /** Stop following the caller's signal (call when every operation has ended). */
  release(): void;
}

export function shareSignal(callerSignal: AbortSignal | undefined): SharedSignal {
  if (!callerSignal) return { signal: undefined, release: () => undefined };
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  const follow = () => controller.abort(callerSignal.reason);
  if (callerSignal.aborted) follow();
  else callerSignal.addEventListener("abort", follow, { once: true });
  return { signal: controller.signal, release: () => callerSignal.removeEventListener("abort", follow) };
}
