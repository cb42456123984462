// When a new sandbox's envd listens, without polling it: envd logs `"msg":"listening"` on its stderr once its
// server is bound, and its stderr is the sandbox's log file on the host (the launcher's --log). Watching that file
// (inotify) tells the moment to send the first /health, so no refused connection attempts burn the CPU envd needs
// to start. The log is only a hint (the sandbox can write it too): readiness is still what /health answers.
import { watch, type FSWatcher } from "node:fs";
import { readFile } from "node:fs/promises";

const LISTENING = '"msg":"listening"';

/** Resolves true once the log says envd listens, false when `timeoutMs` passes first, the watch fails or on abort. */
export function envdListening(logPath: string, opts: { timeoutMs: number; signal?: AbortSignal | undefined }): Promise<boolean> {
  const { signal } = opts;
  return new Promise((resolve) => {
    let done = false;
    let watcher: FSWatcher | undefined;
    let timer: NodeJS.Timeout | undefined;
    let reading = false;
    let again = false;
    const finish = (listening: boolean) => {
      if (done) return;
      done = true;
      watcher?.close();
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      resolve(listening);
    };
    const onAbort = () => finish(false);
    // One read at a time; a change during a read is looked at after it.
    const check = () => {
      if (done) return;
      if (reading) {
        again = true;
        return;
      }
      reading = true;
      readFile(logPath, "utf8").then(
        (text) => {
          reading = false;
          if (text.includes(LISTENING)) finish(true);
          else if (again) {
            again = false;
            check();
          }
        },
        () => {
          reading = false;
        },
      );
    };
    if (signal?.aborted) return finish(false);
    signal?.addEventListener("abort", onAbort, { once: true });
    timer = setTimeout(() => finish(false), opts.timeoutMs);
    try {
      watcher = watch(logPath, { persistent: false }, check);
      watcher.on("error", () => finish(false));
    } catch {
      return finish(false);
    }
    // It may have been written before the watch began.
    check();
  });
}
