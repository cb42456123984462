// Freezing and killing a whole sandbox. The cgroup2 core (cgroup.freeze, cgroup.kill) is preferred, also
// on hybrid hosts where cgroup2 carries no resource controllers: it is race-free and ~1 ms. The v1
// freezer is the fallback for pure-v1 hosts: freeze so nothing can fork, SIGKILL every member, thaw.
import { join } from "node:path";
import { exists, parseKeyValues, readPids, readText, waitUntil, writeText } from "./cgroup-fs.js";

export interface ControlBackend {
  /** The directory whose membership this backend acts on. */
  readonly dir: string;
  freeze(signal: AbortSignal | undefined, timeoutMs: number): Promise<void>;
  thaw(signal: AbortSignal | undefined, timeoutMs: number): Promise<void>;
  /** Send SIGKILL to every member; does not wait for them to go. */
  kill(signal: AbortSignal | undefined, timeoutMs: number): Promise<void>;
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
