// pool_exhausted: a create that found its template's pool empty (the orchestrator's record says `poolEmpty`: the
// template has a pool and none of its sandboxes was ready, so the create waited for a launch). The team is known once
// the sandbox is recorded (its `created` event), so the record waits here until then. Rate-limited per template and
// team: one alert at once, then one per window that counts the creates it covers.
import type { SandboxRecord } from "@burrow/orchestrator";
import type { RaiseAlert } from "./alert-kinds.js";
import { RateWindow } from "./rate-window.js";

const MAX_WAITING = 10_000;

export class PoolExhaustedWatch {
  /** Creates that missed the pool, until their sandbox is recorded (or removed). */
  readonly #missed = new Map<string, string>();
  readonly #window: RateWindow;

  constructor(
    windowMs: number,
    raise: RaiseAlert,
    private readonly teamOf: (sandboxId: string) => string | undefined,
  ) {
    this.#window = new RateWindow(windowMs, (key, count) => {
      const [teamId, templateId] = key.split("\n") as [string, string];
      raise("pool_exhausted", `the warm pool of template ${templateId} was empty for ${count} create(s): each waited for a sandbox to start`, {
        creates: count,
        windowMs,
      }, { teamId: teamId === "" ? undefined : teamId, templateId });
    });
  }

  /** Every create's record, as the orchestrator answers it. */
  onCreated(record: SandboxRecord): void {
    if (!record.poolEmpty) return;
    // A create that failed after the orchestrator answered is never recorded: bound what waits for that.
    if (this.#missed.size >= MAX_WAITING) this.#missed.delete(this.#missed.keys().next().value!);
    this.#missed.set(record.sandboxId, record.templateId);
  }

  /** The sandbox is recorded with its team. */
  onRecorded(sandboxId: string): void {
    const templateId = this.#missed.get(sandboxId);
    if (templateId === undefined) return;
    this.#missed.delete(sandboxId);
    this.#window.hit(`${this.teamOf(sandboxId) ?? ""}\n${templateId}`);
  }

  forget(sandboxId: string): void {
    this.#missed.delete(sandboxId);
  }

  close(): void {
    this.#window.close();
  }
}
