// Warm pools for shipped templates whose sandboxes should come with their start command already run: a desktop
// handed out with Xvfb and the window manager up, instead of starting them while the create waits. A pool is
// made the first time its template is used (one sandbox, while the warm pool is on at all), follows the
// template's name through rebuilds like the main pool, and runs the start command before the sandbox waits in it.
// The start command then runs without the create's env vars and token, as in a template snapshot: what it
// starts sees the template's ENV only.
import { envdAt } from "./envd-client/index.js";
import type { Logger } from "./logger.js";
import type { HostedSandbox, SandboxHost } from "./sandbox-host.js";
import { startTemplateProcess } from "./templates/start-template-process.js";
import type { TemplateManifest, TemplateStore } from "./templates/template-store.js";
import { WarmPool } from "./warm-pool.js";

export interface PrestartedPoolsDeps {
  /** Sandboxes kept ready per template; 0 turns these pools off. */
  size: number;
  templates: TemplateStore;
  host: SandboxHost;
  logger: Logger;
}

export class PrestartedPools {
  private readonly pools = new Map<string, { pool: WarmPool; unfollow: () => void }>();
  /** Pooled sandboxes whose start command ran (and passed its ready check) before they were handed out. */
  private readonly started = new WeakSet<HostedSandbox>();
  private closed = false;

  constructor(private readonly deps: PrestartedPoolsDeps) {}

  /** Keep sandboxes of the template named `name` ready from now on (no-op when already, or when pools are off). */
  use(name: string): void {
    if (this.deps.size <= 0 || this.closed || this.pools.has(name)) return;
    const { templates, host, logger } = this.deps;
    const pool = new WarmPool({
      template: name,
      size: this.deps.size,
      resolve: (ref) => templates.resolve(ref),
      launch: (template, signal) => this.launch(template, signal),
      destroy: (sandbox) => host.destroy(sandbox),
      logger,
    });
    this.pools.set(name, { pool, unfollow: templates.onChange(() => pool.refresh()) });
    pool.fill();
  }

  /** A ready sandbox of exactly this build of the template, or undefined. */
  take(template: TemplateManifest): HostedSandbox | undefined {
    for (const { pool } of this.pools.values()) {
      const sandbox = pool.take(template);
      if (sandbox) return sandbox;
    }
    return undefined;
  }

  /** Whether the sandbox's start command already ran while it waited in a pool. */
  wasStarted(sandbox: HostedSandbox): boolean {
    return this.started.has(sandbox);
  }

  fill(): void {
    for (const { pool } of this.pools.values()) pool.fill();
  }

  async waitFull(signal?: AbortSignal): Promise<void> {
    await Promise.all([...this.pools.values()].map(({ pool }) => pool.waitFull(signal)));
  }

  async close(): Promise<void> {
    this.closed = true;
    const pools = [...this.pools.values()];
    this.pools.clear();
    for (const { unfollow } of pools) unfollow();
    await Promise.allSettled(pools.map(({ pool }) => pool.close()));
  }

  private async launch(template: TemplateManifest, signal: AbortSignal): Promise<HostedSandbox> {
    const { host } = this.deps;
    // Internet access on, as in the main pool: most creates ask for it, so a claim needs no firewall change.
    const sandbox = await host.launch(template, template.defaults, { allowInternetAccess: true, pooled: true, signal });
    try {
      // envd has no access token until the sandbox is claimed (/init); nothing outside the host can reach it yet.
      await startTemplateProcess(envdAt(sandbox.record.ip), template, { signal });
    } catch (error) {
      await host.destroy(sandbox).catch(() => undefined);
      throw error;
    }
    this.started.add(sandbox);
    return sandbox;
  }
}
