// Keeps a few sandboxes of one template started and waiting, so that a create only has to claim one
// (apply limits, network policy and /init) instead of launching. Refills in the background, one at a time,
// so a burst of creates does not stall behind pool refills.
import type { Logger } from "./logger.js";
import type { HostedSandbox } from "./sandbox-host.js";

export interface WarmPoolOptions {
  templateId: string;
  size: number;
  launch: (signal: AbortSignal) => Promise<HostedSandbox>;
  destroy: (sandbox: HostedSandbox) => Promise<void>;
  logger: Logger;
}

export class WarmPool {
  private readonly ready: HostedSandbox[] = [];
  private filling = false;
  private readonly controller = new AbortController();
  private consecutiveFailures = 0;

  constructor(private readonly opts: WarmPoolOptions) {}

  get templateId(): string {
    return this.opts.templateId;
  }

  get readyCount(): number {
    return this.ready.length;
  }

  /**
   * Take a ready sandbox, or undefined when none is ready. The caller calls fill() once it has finished with the
   * claim: a refill started right away would compete with the claim for the CPU on a small machine.
   */
  take(): HostedSandbox | undefined {
    return this.ready.shift();
  }

  /** Start filling up to the configured size (no-op when already filling). */
  fill(): void {
    if (this.filling || this.controller.signal.aborted) return;
    this.filling = true;
    void this.fillLoop().finally(() => {
      this.filling = false;
    });
  }

  /** Resolves once the pool holds its full size (or closes). For start-up and tests. */
  async waitFull(signal?: AbortSignal): Promise<void> {
    while (this.ready.length < this.opts.size && !this.controller.signal.aborted) {
      signal?.throwIfAborted();
      this.fill();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** Stop refilling and destroy the sandboxes still waiting. */
  async close(): Promise<void> {
    this.controller.abort();
    const waiting = this.ready.splice(0);
    await Promise.allSettled(waiting.map((sandbox) => this.opts.destroy(sandbox)));
  }

  private async fillLoop(): Promise<void> {
    while (this.ready.length < this.opts.size && !this.controller.signal.aborted) {
      try {
        const sandbox = await this.opts.launch(this.controller.signal);
        if (this.controller.signal.aborted) {
          await this.opts.destroy(sandbox);
          return;
        }
        this.ready.push(sandbox);
        this.consecutiveFailures = 0;
      } catch (error) {
        if (this.controller.signal.aborted) return;
        this.consecutiveFailures += 1;
        this.opts.logger.error({ err: error, templateId: this.opts.templateId }, "warm pool could not launch a sandbox");
        // Back off so a broken template does not spin the CPU.
        await new Promise((resolve) => setTimeout(resolve, Math.min(30_000, 500 * 2 ** this.consecutiveFailures)));
      }
    }
  }
}
