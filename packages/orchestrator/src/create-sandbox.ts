// Creating a sandbox for the control plane: the template the create names (shipped ones built the first time they
// are asked for), its limits, a ready sandbox from a pool or a fresh launch, and the claim that makes it the
// caller's: limits and network policy as asked, envd's /init with the caller's env vars and token, the template's
// start command.
import { join } from "node:path";
import { BurrowError, Code } from "@burrow/protocol";
import { envdAt, initEnvd } from "./envd-client/index.js";
import { toRecord, type LiveSandboxes } from "./live-sandboxes.js";
import { hasTrustedCa, installSandboxCa, trustEnv } from "./egress/sandbox-trust.js";
import { hasEgressRules, type EgressRules } from "./network/egress-rules.js";
import type { CreateSandboxOptions, EgressRuleLists, SandboxRecord } from "./orchestrator-api.js";
import { egressRulesOf } from "./sandbox-egress.js";
import type { HostedSandbox, SandboxHost } from "./sandbox-host.js";
import { sameLimits, sandboxLimits } from "./sandbox-limits.js";
import type { SandboxPools } from "./sandbox-pools.js";
import { inSpan } from "./tracing.js";
import { writeRecord } from "./sandbox-record.js";
import { BROWSER } from "./templates/browser.js";
import type { TemplateBuilder } from "./templates/builder/template-builder.js";
import { CODE_INTERPRETER } from "./templates/code-interpreter.js";
import { DESKTOP } from "./templates/desktop.js";
import { MCP_GATEWAY } from "./templates/mcp-gateway.js";
import { ensureShippedTemplate, isShippedTemplate } from "./templates/shipped-template.js";
import { startTemplateProcess } from "./templates/start-template-process.js";
import type { TemplateManifest, TemplateStore } from "./templates/template-store.js";
import type { SandboxLimits } from "./types.js";
import type { Logger } from "./logger.js";

export interface CreateSandboxDeps {
  templates: TemplateStore;
  builder: TemplateBuilder;
  host: SandboxHost;
  pools: SandboxPools;
  /** Where the new sandbox goes once claimed. */
  live: LiveSandboxes;
  /** The egress CA sandboxes trust (egress/sandbox-trust.ts), when header transforms are on. */
  sandboxCaPem?: () => string | undefined;
  logger?: Logger | undefined;
}

export function createSandbox(deps: CreateSandboxDeps, opts: CreateSandboxOptions): Promise<SandboxRecord> {
  return inSpan("orchestrator.create", () => createTraced(deps, opts), { "burrow.template": opts.template });
}

async function createTraced(deps: CreateSandboxDeps, opts: CreateSandboxOptions): Promise<SandboxRecord> {
  const { host, pools } = deps;
  const template = await inSpan("orchestrator.template", () => templateFor(deps, opts.template, opts.signal));
  const limits = sandboxLimits(template.defaults, opts.limits ?? {});
  // Only a pooled sandbox of this very build (template id and layers as they are now) is handed out. Volumes are
  // bound into it before anything else (the launcher's --attach-volumes makes the mounts a launch makes); one whose
  // attach fails is killed and the create launches a sandbox of its own, so no half-mounted sandbox is handed out.
  const volumes = opts.volumeMounts ?? [];
  const taken = pools.take(template);
  let sandbox = taken;
  if (taken && volumes.length > 0) {
    try {
      await inSpan("orchestrator.attach_volumes", () => host.attachVolumes(taken, volumes, opts.signal));
    } catch (error) {
      await host.destroy(taken).catch(() => undefined);
      if (opts.signal?.aborted) throw error;
      sandbox = undefined;
    }
  }
  let createdFrom: NonNullable<SandboxRecord["createdFrom"]> = sandbox ? "pool" : "launch";
  // The template has a pool and it had nothing ready: this create waits for a launch (alerts: pool_exhausted).
  const poolEmpty = !taken && pools.serves(template);
  if (!sandbox) {
    sandbox = await fromShell(deps, template, volumes, opts.inBurst ?? false, opts.signal);
    if (sandbox) createdFrom = "shell";
  }
  if (!sandbox) {
    sandbox = await inSpan("orchestrator.launch", () =>
      host.launch(template, limits, {
        allowInternetAccess: opts.allowInternetAccess,
        pooled: false,
        signal: opts.signal,
        volumes,
      }),
    );
  }
  try {
    const claimed = sandbox;
    await inSpan("orchestrator.claim", () => claim(deps, claimed, template, limits, opts), { "burrow.created_from": createdFrom });
  } catch (error) {
    await host.destroy(sandbox).catch(() => undefined);
    throw error;
  } finally {
    pools.fill();
  }
  deps.live.add(sandbox, { layers: [...template.layers], runtime: template.runtime, envVars: { ...opts.envVars } });
  return { ...toRecord(sandbox), createdFrom, ...(poolEmpty ? { poolEmpty } : {}) };
}

/**
 * A prepared sandbox given the template's root (SandboxHost.swapRoot) and the create's volumes, or undefined when
 * none is ready or making it one failed (it is destroyed and the create launches instead).
 */
async function fromShell(
  deps: CreateSandboxDeps,
  template: TemplateManifest,
  volumes: NonNullable<CreateSandboxOptions["volumeMounts"]>,
  inBurst: boolean,
  signal: AbortSignal | undefined,
): Promise<HostedSandbox | undefined> {
  const shell = deps.pools.takeShell(inBurst);
  if (!shell) return undefined;
  try {
    await inSpan("orchestrator.swap_root", () => deps.host.swapRoot(shell, template, signal));
    if (volumes.length > 0) await inSpan("orchestrator.attach_volumes", () => deps.host.attachVolumes(shell, volumes, signal));
    return shell;
  } catch (error) {
    await deps.host.destroy(shell).catch(() => undefined);
    if (signal?.aborted) throw error;
    deps.logger?.warn({ err: error, template: template.templateId }, "a prepared sandbox could not take the template's root; launching instead");
    return undefined;
  }
}

/** The template a create names; the shipped code-interpreter, mcp-gateway, desktop and browser are built the first time they are asked for. */
async function templateFor(deps: CreateSandboxDeps, ref: string, signal?: AbortSignal): Promise<TemplateManifest> {
  const { builder, templates } = deps;
  const shipped = [DESKTOP, BROWSER, CODE_INTERPRETER, MCP_GATEWAY].find((template) => isShippedTemplate(template, ref));
  if (shipped) {
    const manifest = await ensureShippedTemplate(builder, templates, shipped, { signal });
    if (shipped.prestartInPool) deps.pools.usePrestarted(shipped.name);
    return manifest;
  }
  const template = templates.resolve(ref);
  if (template) return template;
  throw new BurrowError(Code.NotFound, `template '${ref}' not found`, { reason: "template_not_found" });
}

/** Make a launched or pooled sandbox the caller's; its record is written last, as a claimed sandbox. */
export async function claim(
  deps: CreateSandboxDeps,
  sandbox: HostedSandbox,
  template: TemplateManifest,
  limits: SandboxLimits,
  opts: CreateSandboxOptions,
): Promise<void> {
  const { record } = sandbox;
  if (!sameLimits(record.limits, limits)) await sandbox.cgroup.setLimits(limits);
  if (record.limits.diskMB !== limits.diskMB) await deps.host.setDiskLimit(sandbox, limits.diskMB);
  // Rules are in place before envd gets the caller's env vars and before the template's start command runs.
  const egress = claimEgress(opts.egress);
  if (egress) {
    await sandbox.network.setEgress(opts.allowInternetAccess, egress, opts.signal);
  } else if (record.allowInternetAccess !== opts.allowInternetAccess) {
    await sandbox.network.setInternetAccess(opts.allowInternetAccess);
  }
  const caPem = deps.sandboxCaPem?.();
  await inSpan("envd.init", () =>
    initEnvd(
      envdAt(record.ip, record.initToken),
      {
        envVars: { ...trustEnv(caPem), ...template.runtime?.env, ...opts.envVars },
        accessToken: opts.envdAccessToken,
        defaultUser: template.runtime?.user ?? "user",
        defaultWorkdir: template.runtime?.workdir ?? "/home/user",
      },
      opts.signal,
    ),
  );
  // Launches write the CA into the writable layer; a sandbox launched before the CA was known (the first pool of a
  // start) gets it through envd, best effort: a template without a shell still makes a sandbox, whose TLS to hosts
  // with header rules then fails verification (what its user sees) while everything else works.
  if (caPem !== undefined && !hasTrustedCa(join(sandbox.dir, "upper"))) {
    await installSandboxCa(envdAt(record.ip, opts.envdAccessToken), caPem, opts.signal).catch(() => undefined);
  }
  if (!deps.pools.wasStarted(sandbox)) {
    await inSpan("orchestrator.start_command", () => startTemplateProcess(envdAt(record.ip, opts.envdAccessToken), template, { signal: opts.signal }));
  }
  sandbox.record = {
    ...record,
    limits,
    allowInternetAccess: opts.allowInternetAccess,
    egress,
    startedAt: new Date().toISOString(),
    pooled: false,
    // What a cold boot needs to do this claim's /init and start command again (cold-boot.ts).
    boot: { layers: [...template.layers], runtime: template.runtime, envVars: { ...trustEnv(caPem), ...opts.envVars }, accessToken: opts.envdAccessToken },
  };
  await writeRecord(sandbox.dir, sandbox.record);
}

/** A create's allowOut/denyOut in canonical form, undefined when it names none. */
function claimEgress(lists: EgressRuleLists | undefined): EgressRules | undefined {
  const rules = lists && egressRulesOf(lists);
  return hasEgressRules(rules) ? rules : undefined;
}
