// Freezing and killing a whole sandbox. The cgroup2 core (cgroup.freeze, cgroup.kill) is preferred, also
// on hybrid hosts where cgroup2 carries no resource controllers: it is race-free and ~1 ms. The v1
// freezer is the fallback for pure-v1 hosts: freeze so nothing can fork, SIGKILL every member, thaw.
import { watch, type FSWatcher } from "node:fs";
import { join } from "node:path";
import { BurrowError, Code } from "@burrow/protocol";
import { exists, parseKeyValues, readOptional, readPids, readText, waitUntil, writeText } from "./cgroup-fs.js";

export interface ControlBackend {
  /** The directory whose membership this backend acts on. */
  readonly dir: string;
  freeze(signal: AbortSignal | undefined, timeoutMs: number): Promise<void>;
  thaw(signal: AbortSignal | undefined, timeoutMs: number): Promise<void>;
  /** Send SIGKILL to every member; does not wait for them to go. */
  kill(signal: AbortSignal | undefined, timeoutMs: number): Promise<void>;
  /** Settle once the directory has no member left, when the backend can be told so without polling. */
  waitEmpty?(signal: AbortSignal | undefined, timeoutMs: number): Promise<void>;
}

/** Signal each pid once; a pid that is already gone is what we wanted anyway. */
export function killPids(pids: Iterable<number>): void {
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ESRCH") throw e;
    }
  }
}

export class V2Control implements ControlBackend {
  constructor(readonly dir: string) {}

  async #events(): Promise<Map<string, number>> {
    return parseKeyValues(await readText(join(this.dir, "cgroup.events")));
  }

  async freeze(signal: AbortSignal | undefined, timeoutMs: number): Promise<void> {
    await writeText(join(this.dir, "cgroup.freeze"), "1");
    await waitUntil(async () => (await this.#events()).get("frozen") === 1, { signal, timeoutMs, what: `${this.dir} to freeze` });
  }

  async thaw(signal: AbortSignal | undefined, timeoutMs: number): Promise<void> {
    await writeText(join(this.dir, "cgroup.freeze"), "0");
    await waitUntil(async () => (await this.#events()).get("frozen") === 0, { signal, timeoutMs, what: `${this.dir} to thaw` });
  }

  async kill(signal: AbortSignal | undefined, timeoutMs: number): Promise<void> {
    if (await exists(join(this.dir, "cgroup.kill"))) {
      await writeText(join(this.dir, "cgroup.kill"), "1");
      return;
    }
    if (!(await exists(this.dir))) return; // destroyed already: nobody left to kill
    // Kernels before 5.14 have cgroup.freeze but no cgroup.kill: a frozen cgroup cannot fork, and
    // SIGKILL still reaches frozen tasks.
    await this.freeze(signal, timeoutMs);
    killPids(await readPids(this.dir));
    await this.thaw(signal, timeoutMs);
  }

  waitEmpty(signal: AbortSignal | undefined, timeoutMs: number): Promise<void> {
    return waitUnpopulated(this.dir, signal, timeoutMs);
  }
}

/**
 * Wait until cgroup2's `populated` is 0 for `dir`. The kernel notifies every change of cgroup.events to inotify, so
 * a mass kill waits without polling: hundreds of sandboxes polling their cgroup files every few milliseconds kept
 * libuv's thread pool busy and slowed every other step of their teardowns. A missing directory has no member.
 */
function waitUnpopulated(dir: string, signal: AbortSignal | undefined, timeoutMs: number): Promise<void> {
  const events = join(dir, "cgroup.events");
  return new Promise<void>((resolve, reject) => {
    let watcher: FSWatcher | undefined;
    let timer: NodeJS.Timeout | undefined;
    let checking: Promise<void> | undefined;
    let recheck = false;
    const finish = (error?: unknown) => {
      watcher?.close();
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      if (error === undefined) resolve();
      else reject(error);
    };
    const onAbort = () => finish(new BurrowError(Code.Canceled, `aborted waiting for ${dir} to be empty`, { cause: signal?.reason }));
    // One read at a time; a notification during a read asks for one more, so the last change is never missed.
    const check = (): void => {
      if (checking) {
        recheck = true;
        return;
      }
      checking = readOptional(events).then(
        (text) => {
          checking = undefined;
          if (text === undefined || parseKeyValues(text).get("populated") === 0) finish();
          else if (recheck) {
            recheck = false;
            check();
          }
        },
        (error: unknown) => finish(error),
      );
    };
    if (signal?.aborted) return onAbort();
    try {
      watcher = watch(events, check);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return finish();
      return finish(new BurrowError(Code.Internal, `cannot watch ${events}: ${(error as Error).message}`, { reason: "cgroup_io", cause: error }));
    }
    watcher.on("error", (error) => finish(new BurrowError(Code.Internal, `watching ${events} failed: ${error.message}`, { reason: "cgroup_io", cause: error })));
    signal?.addEventListener("abort", onAbort, { once: true });
    timer = setTimeout(
      () => finish(new BurrowError(Code.DeadlineExceeded, `timed out after ${timeoutMs} ms waiting for ${dir} to be empty`, { reason: "cgroup_timeout" })),
      timeoutMs,
    );
    // After the watch is in place: a change before it is seen by this read, one after it by the watch.
    check();
  });
}

export class V1FreezerControl implements ControlBackend {
  constructor(readonly dir: string) {}

  async #state(): Promise<string> {
    return (await readText(join(this.dir, "freezer.state"))).trim();
  }

  async freeze(signal: AbortSignal | undefined, timeoutMs: number): Promise<void> {
    await writeText(join(this.dir, "freezer.state"), "FROZEN");
    // FREEZING until every task has stopped; rewriting FROZEN nudges tasks that were mid-fork.
    await waitUntil(
      async () => {
        if ((await this.#state()) === "FROZEN") return true;
        await writeText(join(this.dir, "freezer.state"), "FROZEN");
        return false;
      },
      { signal, timeoutMs, what: `${this.dir} to freeze` },
    );
  }

  async thaw(signal: AbortSignal | undefined, timeoutMs: number): Promise<void> {
    await writeText(join(this.dir, "freezer.state"), "THAWED");
    await waitUntil(async () => (await this.#state()) === "THAWED", { signal, timeoutMs, what: `${this.dir} to thaw` });
  }

  async kill(signal: AbortSignal | undefined, timeoutMs: number): Promise<void> {
    if (!(await exists(this.dir))) return; // destroyed already: nobody left to kill
    try {
      await this.freeze(signal, timeoutMs);
      killPids(await readPids(this.dir));
    } finally {
      // Always thaw, also after an abort: the signals are delivered as the tasks thaw, and a sandbox
      // must never be left frozen by a kill that gave up. Nothing could fork in between.
      await this.thaw(undefined, timeoutMs);
    }
  }
}
