// Keeps a few sandboxes of one template started and waiting, so that a create only has to claim one
// (apply limits, network policy and /init) instead of launching. Refills in the background, one at a time,
// so a burst of creates does not stall behind pool refills.
//
// The pool follows a template *reference* (an alias such as `base`, `name:tag` or an id), not a manifest fixed at
// start: a rebuild, a moved tag or a delete changes what the reference names. Every pooled sandbox remembers the
// build it was started from; sandboxes of any other build are killed, never handed out, and the pool refills from
// the build the reference names now.
import type { Logger } from "./logger.js";
import type { HostedSandbox } from "./sandbox-host.js";
import type { TemplateManifest } from "./templates/template-store.js";

export interface WarmPoolOptions {
  /** The template reference the pool keeps sandboxes of; resolved anew on every refresh, take and launch. */
  template: string;
  size: number;
  /** The manifest `ref` names now, or undefined when it names none (deleted, not built yet). */
  resolve: (ref: string) => TemplateManifest | undefined;
  launch: (template: TemplateManifest, signal: AbortSignal) => Promise<HostedSandbox>;
  destroy: (sandbox: HostedSandbox) => Promise<void>;
  logger: Logger;
}

interface PooledSandbox {
  sandbox: HostedSandbox;
  /** buildKey() of the manifest it was launched from. */
  build: string;
}

/**
 * What a pooled sandbox's files come from: the template and its layer stack. The rest of a build (env, user,
 * workdir, start command) is applied from the template's current manifest when a sandbox is claimed, so two
 * builds with the same layers give interchangeable pooled sandboxes.
 */
export function buildKey(template: Pick<TemplateManifest, "templateId" | "layers">): string {
  return `${template.templateId}\n${template.layers.join("\n")}`;
}

export class WarmPool {
  /** Date.now() before which no launch starts (deferRefill). */
  private refillNotBefore = 0;
  private ready: PooledSandbox[] = [];
  private filling = false;
  private readonly controller = new AbortController();
  /** The launch under way and the build it launches, so that a change of template can cancel it. */
  private launching: { build: string; controller: AbortController } | undefined;
  private consecutiveFailures = 0;

  constructor(private readonly opts: WarmPoolOptions) {}

  /** The reference the pool follows. */
  get template(): string {
    return this.opts.template;
  }

  /** Whether the pool keeps sandboxes of exactly this build (its reference names it now). */
  serves(template: Pick<TemplateManifest, "templateId" | "layers">): boolean {
    return this.currentBuild() === buildKey(template);
  }

  get readyCount(): number {
    return this.ready.length;
  }

  /** Target size, sandboxes ready, and the one being launched (if any) to refill. */
  status(): { template: string; target: number; ready: number; starting: number } {
    return { template: this.opts.template, target: this.opts.size, ready: this.ready.length, starting: this.launching ? 1 : 0 };
  }

  /**
   * Take a ready sandbox of exactly `template`'s build (its id and layers as they are now), or undefined when none
   * is ready. Sandboxes of a build the pool's reference no longer names are discarded first, so a stale one is
   * never handed out even when a change of template was not signalled. The caller calls fill() once it has
   * finished with the claim: a refill started right away would compete with the claim for the CPU on a small
   * machine.
   */
  take(template: Pick<TemplateManifest, "templateId" | "layers">): HostedSandbox | undefined {
    this.discardStale();
    const wanted = buildKey(template);
    const index = this.ready.findIndex((pooled) => pooled.build === wanted);
    if (index < 0) return undefined;
    const [taken] = this.ready.splice(index, 1);
    return taken?.sandbox;
  }

  /** Take any ready sandbox of the current build (prepared sandboxes, whose root is replaced when claimed). */
  takeAny(): HostedSandbox | undefined {
    this.discardStale();
    return this.ready.shift()?.sandbox;
  }

  /**
   * Launch nothing for `ms` from now (a launch under way finishes). For bursts of takes whose sandboxes are put to
   * work at once: a launch is tens of milliseconds of CPU that would compete with them. See SandboxPools.
   */
  deferRefill(ms: number): void {
    this.refillNotBefore = Math.max(this.refillNotBefore, Date.now() + ms);
  }

  /**
   * Templates changed (a build was published, a tag moved, a template was deleted): kill the pooled sandboxes of a
   * build the reference no longer names, cancel a launch of one, and refill from the current build.
   */
  refresh(): void {
    if (this.controller.signal.aborted) return;
    const current = this.currentBuild();
    this.discardStale(current);
    if (this.launching && this.launching.build !== current) this.launching.controller.abort(new Error("the pool's template changed"));
    this.fill();
  }

  /** Start filling up to the configured size (no-op when already filling). */
  fill(): void {
    if (this.filling || this.controller.signal.aborted) return;
    this.filling = true;
    void this.fillLoop().finally(() => {
      this.filling = false;
    });
  }

  /**
   * Resolves once the pool holds its full size, or when there is nothing to fill it from (the reference names no
   * template) or it closes. For start-up, benchmarks and tests.
   */
  async waitFull(signal?: AbortSignal): Promise<void> {
    while (this.ready.length < this.opts.size && !this.controller.signal.aborted && this.currentBuild() !== undefined) {
      signal?.throwIfAborted();
      this.fill();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** Stop refilling and destroy the sandboxes still waiting. */
  async close(): Promise<void> {
    this.controller.abort();
    this.launching?.controller.abort();
    const waiting = this.ready.splice(0);
    await Promise.allSettled(waiting.map((pooled) => this.opts.destroy(pooled.sandbox)));
  }

  private currentBuild(): string | undefined {
    const template = this.opts.resolve(this.opts.template);
    return template ? buildKey(template) : undefined;
  }

  /** Remove from the ready list, and kill in the background, every sandbox not of `current`. */
  private discardStale(current = this.currentBuild()): void {
    const stale = this.ready.filter((pooled) => pooled.build !== current);
    if (stale.length === 0) return;
    this.ready = this.ready.filter((pooled) => pooled.build === current);
    this.opts.logger.info({ template: this.opts.template, discarded: stale.length }, "warm pool: discarding sandboxes of a previous build");
    for (const pooled of stale) this.destroyQuietly(pooled.sandbox);
  }

  private destroyQuietly(sandbox: HostedSandbox): void {
    void this.opts
      .destroy(sandbox)
      .catch((error: unknown) =>
        this.opts.logger.error({ err: error, sandboxId: sandbox.record.sandboxId }, "warm pool could not destroy a discarded sandbox"),
      );
  }

  private async fillLoop(): Promise<void> {
    // A claim calls fill() before its create is answered: launching starts once that answer is on its way.
    await new Promise((resolve) => setImmediate(resolve));
    while (this.ready.length < this.opts.size && !this.controller.signal.aborted) {
      const deferred = this.refillNotBefore - Date.now();
      if (deferred > 0) {
        await new Promise((resolve) => setTimeout(resolve, deferred));
        continue;
      }
      const template = this.opts.resolve(this.opts.template);
      // Nothing to launch from; refresh() starts filling again once the reference names a template.
      if (!template) return;
      const build = buildKey(template);
      const launch = new AbortController();
      const onClose = () => launch.abort();
      this.controller.signal.addEventListener("abort", onClose, { once: true });
      this.launching = { build, controller: launch };
      try {
        const sandbox = await this.opts.launch(template, launch.signal);
        if (this.controller.signal.aborted) {
          await this.opts.destroy(sandbox);
          return;
        }
        if (build !== this.currentBuild()) {
          // The template changed while this one started: it is of the old build.
          this.destroyQuietly(sandbox);
          continue;
        }
        this.ready.push({ sandbox, build });
        this.consecutiveFailures = 0;
      } catch (error) {
        if (this.controller.signal.aborted) return;
        // Canceled because the template changed: start one of the new build at once.
        if (launch.signal.aborted) continue;
        this.consecutiveFailures += 1;
        this.opts.logger.error({ err: error, template: this.opts.template }, "warm pool could not launch a sandbox");
        // Back off so a broken template does not spin the CPU.
        await new Promise((resolve) => setTimeout(resolve, Math.min(30_000, 500 * 2 ** this.consecutiveFailures)));
      } finally {
        this.controller.signal.removeEventListener("abort", onClose);
        if (this.launching?.controller === launch) this.launching = undefined;
      }
    }
  }
}
