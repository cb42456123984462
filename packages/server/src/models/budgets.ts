// Fixed-window budgets of requests and tokens, kept in memory (a restart starts fresh windows). A request is
// counted when admitted; its tokens when its answer's usage is known, so a window's last request may overshoot.
import type { Budget } from "./gateway-settings.js";

interface Window {
  start: number;
  requests: number;
  tokens: number;
}

export class BudgetCounters {
  readonly #windows = new Map<string, Window>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  #window(subject: string, budget: Budget): Window {
    const windowMs = budget.windowSec * 1000;
    const start = Math.floor(this.#now() / windowMs) * windowMs;
    let w = this.#windows.get(subject);
    if (!w || w.start !== start) {
      w = { start, requests: 0, tokens: 0 };
      this.#windows.set(subject, w);
    }
    return w;
  }

  /** What is exhausted for `subject` under `budget` ("requests" or "tokens"), or undefined when a request may go. */
  exhausted(subject: string, budget: Budget | null): "requests" | "tokens" | undefined {
    if (!budget) return undefined;
    const w = this.#window(subject, budget);
    if (budget.requests !== undefined && w.requests >= budget.requests) return "requests";
    if (budget.tokens !== undefined && w.tokens >= budget.tokens) return "tokens";
    return undefined;
  }

  countRequest(subject: string, budget: Budget | null): void {
    if (budget) this.#window(subject, budget).requests++;
  }

  countTokens(subject: string, budget: Budget | null, tokens: number): void {
    if (budget) this.#window(subject, budget).tokens += tokens;
  }

  /** Seconds until `subject`'s current window ends (for Retry-After). */
  retryAfterSec(budget: Budget): number {
    const windowMs = budget.windowSec * 1000;
    return Math.max(1, Math.ceil((windowMs - (this.#now() % windowMs)) / 1000));
  }

  clear(): void {
    this.#windows.clear();
  }
}
