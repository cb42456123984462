// Alert webhooks, kept in one JSON file in the state directory (0600: it holds the signing secrets). Few and
// rarely changed, so the whole file is rewritten on each change.
import { randomBytes } from "node:crypto";
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { AlertKind } from "./alert-kinds.js";

export interface Webhook {
  id: string;
  url: string;
  kinds: AlertKind[];
  secret: string;
  /** The team that configured it; it receives alerts about that team's sandboxes, queues and agents (null: all). */
  teamId: string | null;
  /** dead_letters only when a queue's count grew by at least this much since this webhook was last told (absent: 1). */
  deadLetterThreshold?: number;
  createdAt: string;
}

export class WebhookStore {
  readonly #file: string;
  #hooks: Webhook[];

  constructor(stateDir: string) {
    this.#file = join(stateDir, "alert-webhooks.json");
    try {
      this.#hooks = JSON.parse(readFileSync(this.#file, "utf8")) as Webhook[];
    } catch {
      this.#hooks = [];
    }
  }

  list(): Webhook[] {
    return this.#hooks.map((h) => ({ ...h, kinds: [...h.kinds] }));
  }

  add(input: Omit<Webhook, "id" | "createdAt">): Webhook {
    const hook: Webhook = { ...input, id: `wh_${randomBytes(8).toString("hex")}`, createdAt: new Date().toISOString() };
    this.#hooks.push(hook);
    this.#save();
    return hook;
  }

  remove(id: string): boolean {
    const before = this.#hooks.length;
    this.#hooks = this.#hooks.filter((h) => h.id !== id);
    if (this.#hooks.length === before) return false;
    this.#save();
    return true;
  }

  #save(): void {
    const tmp = `${this.#file}.tmp`;
    writeFileSync(tmp, JSON.stringify(this.#hooks, null, 2), { mode: 0o600 });
    renameSync(tmp, this.#file);
  }
}
