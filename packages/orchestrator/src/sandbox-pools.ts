// The pools a create takes a ready sandbox from before it launches one: the warm pool of the configured template
// (warm-pool.ts) and the pools of shipped templates whose sandboxes wait with their start command run
// (prestarted-pools.ts).
import type { OrchestratorConfig } from "./config.js";
import type { Logger } from "./logger.js";
import type { PoolFill } from "./orchestrator-api.js";
import { PrestartedPools } from "./prestarted-pools.js";
import { SHELL_TEMPLATE_ID, type HostedSandbox, type SandboxHost } from "./sandbox-host.js";
import type { TemplateManifest, TemplateStore } from "./templates/template-store.js";
import { WarmPool } from "./warm-pool.js";

export interface SandboxPoolsDeps {
  config: Readonly<OrchestratorConfig>;
  templates: TemplateStore;
  host: SandboxHost;
  logger: Logger;
}

/**
 * How long the prepared sandboxes' refill waits after a claim that is part of a burst (a fork's children). Their
 * first commands follow within a few hundred milliseconds; a launch started at the first claim (envd starting, the
 * network, the launcher: tens of ms of CPU) competed with the other claims and with those commands on a small host.
 * Same-run probe, 10 children, 2 vCPUs, five rounds each way interleaved: all children answering, median 332 -> 280
 * ms. Single creates do not wait: a steady stream of them needs the refill as soon as possible.
 */
const BURST_REFILL_DELAY_MS = 400;

export class SandboxPools {
  private warm: WarmPool | undefined;
  /** Prepared sandboxes of no template yet (config pool.shells), for creates no pool serves. */
  private shells: WarmPool | undefined;
  /** Stops the warm pool following template changes (set while a pool runs). */
  private unfollowTemplates: (() => void) | undefined;
  private readonly prestarted: PrestartedPools;

  constructor(private readonly deps: SandboxPoolsDeps) {
    const { config, templates, host, logger } = deps;
    this.prestarted = new PrestartedPools({ size: config.pool.size > 0 ? 1 : 0, sizes: config.pool.sizes, templates, host, logger });
  }

  /** Start filling the warm pool and the prepared sandboxes (those that have a size). */
  start(): void {
    const { config, templates, host, logger } = this.deps;
    const { pool } = config;
    const shellCount = pool.shells ?? 0;
    if (pool.size <= 0 && shellCount <= 0) return;
    if (!templates.resolve(pool.template)) {
      logger.warn({ template: pool.template }, "warm pool template not found; the pool fills once it exists");
    }
    // Pooled sandboxes start with internet access because that is what most creates ask for (E2B's default):
    // claiming one then needs no firewall change. Nothing runs in them until they are claimed. The shells' first root
    // is the pool's template too: any layers would do, and these are on every host.
    const poolOf = (size: number, shell: boolean) =>
      size > 0
        ? new WarmPool({
            template: pool.template,
            size,
            resolve: (ref) => templates.resolve(ref),
            launch: (template, signal) => host.launch(template, template.defaults, { allowInternetAccess: true, pooled: true, shell, signal }),
            destroy: (sandbox) => host.destroy(sandbox),
            logger,
          })
        : undefined;
    const warm = poolOf(pool.size, false);
    const shells = poolOf(shellCount, true);
    this.warm = warm;
    this.shells = shells;
    // A rebuild, a moved tag or a delete of the pool's template: sandboxes of the old build go, new ones come.
    this.unfollowTemplates = templates.onChange(() => {
      warm?.refresh();
      shells?.refresh();
    });
    warm?.fill();
    shells?.fill();
  }

  /**
   * A prepared sandbox of no template yet (SandboxHost.swapRoot makes it one), or undefined when none is ready.
   * `inBurst`: one of many taken at once, whose refill waits for them to get going (BURST_REFILL_DELAY_MS).
   */
  takeShell(inBurst = false): HostedSandbox | undefined {
    const shell = this.shells?.takeAny();
    if (shell && inBurst) this.shells?.deferRefill(BURST_REFILL_DELAY_MS);
    return shell;
  }

  /** Keep sandboxes of the shipped template `name` ready, their start command run (PrestartedPools.use). */
  usePrestarted(name: string): void {
    this.prestarted.use(name);
  }

  /** A ready sandbox of exactly this build of the template (its id and layers as they are now), or undefined. */
  take(template: TemplateManifest): HostedSandbox | undefined {
    return this.warm?.take(template) ?? this.prestarted.take(template);
  }

  /** Whether a pool keeps sandboxes of exactly this build (empty or not). */
  serves(template: TemplateManifest): boolean {
    return (this.warm?.serves(template) ?? false) || this.prestarted.serves(template);
  }

  /** Every pool's fill: the warm pool (when it has a size) and the prestarted pools made so far. */
  status(): PoolFill[] {
    const out: PoolFill[] = [];
    if (this.warm) out.push({ kind: "warm", ...this.warm.status() });
    // Shells serve every template: "*", so that nothing reads them as sandboxes of the template they first run.
    if (this.shells) out.push({ kind: "shells", ...this.shells.status(), template: SHELL_TEMPLATE_ID });
    for (const s of this.prestarted.status()) out.push({ kind: "prestarted", ...s });
    return out;
  }

  /** Whether the sandbox's start command already ran while it waited in a pool. */
  wasStarted(sandbox: HostedSandbox): boolean {
    return this.prestarted.wasStarted(sandbox);
  }

  /** Refill in the background what takes emptied. */
  fill(): void {
    this.warm?.fill();
    this.shells?.fill();
    this.prestarted.fill();
  }

  /** Wait until every pool is full (start-up, benchmarks). */
  async waitFull(signal?: AbortSignal): Promise<void> {
    await this.warm?.waitFull(signal);
    await this.shells?.waitFull(signal);
    await this.prestarted.waitFull(signal);
  }

  async close(): Promise<void> {
    this.unfollowTemplates?.();
    await this.warm?.close();
    await this.shells?.close();
    await this.prestarted.close();
  }
}
