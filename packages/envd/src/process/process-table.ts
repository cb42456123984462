import type { ManagedProcess } from "./managed-process.js";

// Finished processes are remembered so a late Connect gets the end event; bounded so envd's memory is too.
const RETAINED_EXITED = 256;

/** Running and recently finished processes, by pid and tag. */
export class ProcessTable {
  #running = new Map<number, ManagedProcess>();
  #exited = new Map<number, ManagedProcess>();

  add(p: ManagedProcess): void {
    this.#running.set(p.pid, p);
    void p.ended.then(() => {
      this.#running.delete(p.pid);
      this.#exited.delete(p.pid);
      this.#exited.set(p.pid, p);
      if (this.#exited.size > RETAINED_EXITED) {
        const oldest = this.#exited.keys().next().value as number;
        this.#exited.delete(oldest);
      }
    });
  }

  running(): ManagedProcess[] {
    return [...this.#running.values()];
  }

  /** A running process by pid or tag. */
  findRunning(sel: { pid?: number; tag?: string }): ManagedProcess | undefined {
    if (sel.pid !== undefined) return this.#running.get(sel.pid);
    for (const p of this.#running.values()) if (p.description.tag === sel.tag) return p;
    return undefined;
  }

  /** A running or retained finished process. */
  find(sel: { pid?: number; tag?: string }): ManagedProcess | undefined {
    const r = this.findRunning(sel);
    if (r) return r;
    if (sel.pid !== undefined) return this.#exited.get(sel.pid);
    return [...this.#exited.values()].reverse().find((p) => p.description.tag === sel.tag);
  }

  /** Kills every running process (envd shutdown). */
  killAll(): void {
    for (const p of this.#running.values()) p.signal("SIGKILL");
  }
}
