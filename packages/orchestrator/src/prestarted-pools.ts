// Warm pools for shipped templates whose sandboxes should come with their start command already run: a desktop
// handed out with Xvfb and the window manager up, a code interpreter with its kernels started, instead of starting
// them while the create waits. A pool is made the first time its template is used (one sandbox while the warm
// pool is on at all, or the size configured for that template), follows the template's name through rebuilds like
// the main pool, and runs the start command before the sandbox waits in it.
// The start command then runs without the create's env vars and token, as in a template snapshot: what it
// starts sees the template's ENV only.
import { envdAt } from "./envd-client/index.js";
import type { Logger } from "./logger.js";
import type { HostedSandbox, SandboxHost } from "./sandbox-host.js";
import { startTemplateProcess } from "./templates/start-template-process.js";
import type { TemplateManifest, TemplateStore } from "./templates/template-store.js";
import { WarmPool } from "./warm-pool.js";

/**
 * How long a refill waits after a claim. Starting a prestarted sandbox is seconds of CPU (kernels, a desktop); begun
 * at once, it shares a small machine's cores with the claimed sandbox's first runs (on two cores the first
 * runCode took 15-20 ms longer). The sandbox it replaces took seconds to start anyway.
 */
const REFILL_DELAY_MS = 1000;

export interface PrestartedPoolsDeps {
  /** Sandboxes kept ready per template that `sizes` does not name; 0 turns those pools off. */
  size: number;
  /** Sandboxes kept ready by template name or alias (`code-interpreter-v1`, `desktop`), overriding `size`. */
  sizes?: Readonly<Record<string, number>> | undefined;
  templates: TemplateStore;
  host: SandboxHost;
  logger: Logger;
}

export class PrestartedPools {
  private readonly pools = new Map<string, { pool: WarmPool; unfollow: () => void }>();
  /** Pooled sandboxes whose start command ran (and passed its ready check) before they were handed out. */
  private readonly started = new WeakSet<HostedSandbox>();
  private closed = false;
  private refillTimer: NodeJS.Timeout | undefined;

  constructor(private readonly deps: PrestartedPoolsDeps) {}

  /** Keep sandboxes of the template named `name` ready from now on (no-op when already, or when pools are off). */
  use(name: string): void {
    if (this.closed || this.pools.has(name)) return;
    const size = this.sizeFor(name);
    if (size <= 0) return;
    const { templates, host, logger } = this.deps;
    const pool = new WarmPool({
      template: name,
      size,
      resolve: (ref) => templates.resolve(ref),
      launch: (template, signal) => this.launch(template, signal),
      destroy: (sandbox) => host.destroy(sandbox),
      logger,
    });
    this.pools.set(name, { pool, unfollow: templates.onChange(() => pool.refresh()) });
    pool.fill();
  }

  /** The configured size for the template `name`, given by that name or by another name of the same template. */
  sizeFor(name: string): number {
    return prestartedPoolSize(name, this.deps, (ref) => this.deps.templates.resolve(ref)?.templateId);
  }

  /** A ready sandbox of exactly this build of the template, or undefined. */
  take(template: TemplateManifest): HostedSandbox | undefined {
    for (const { pool } of this.pools.values()) {
      const sandbox = pool.take(template);
      if (sandbox) return sandbox;
    }
    return undefined;
  }

  /** Each pool's fill, by the template name it was made for. */
  status(): { template: string; target: number; ready: number; starting: number }[] {
    return [...this.pools.values()].map(({ pool }) => pool.status());
  }

  /** Whether one of the pools keeps sandboxes of exactly this build. */
  serves(template: TemplateManifest): boolean {
    return [...this.pools.values()].some(({ pool }) => pool.serves(template));
  }

  /** Whether the sandbox's start command already ran while it waited in a pool. */
  wasStarted(sandbox: HostedSandbox): boolean {
    return this.started.has(sandbox);
  }

  /** Refill what claims took, after REFILL_DELAY_MS (waitFull fills at once). */
  fill(): void {
    if (this.closed || this.refillTimer) return;
    this.refillTimer = setTimeout(() => {
      this.refillTimer = undefined;
      for (const { pool } of this.pools.values()) pool.fill();
    }, REFILL_DELAY_MS);
    this.refillTimer.unref();
  }

  async waitFull(signal?: AbortSignal): Promise<void> {
    await Promise.all([...this.pools.values()].map(({ pool }) => pool.waitFull(signal)));
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.refillTimer);
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

/**
 * How many sandboxes of the template `name` a prestarted pool keeps: its entry in `sizes` (under that name, or under
 * any name `templateIdOf` maps to the same template, such as an alias), else `size`.
 */
export function prestartedPoolSize(
  name: string,
  config: { size: number; sizes?: Readonly<Record<string, number>> | undefined },
  templateIdOf: (ref: string) => string | undefined,
): number {
  const sizes = config.sizes ?? {};
  if (Object.hasOwn(sizes, name)) return sizes[name]!;
  const id = templateIdOf(name);
  const alias = id === undefined ? undefined : Object.keys(sizes).find((ref) => templateIdOf(ref) === id);
  return alias === undefined ? config.size : sizes[alias]!;
}
