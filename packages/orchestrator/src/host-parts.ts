// What the orchestrator of one machine is assembled from, brought up in order at start: the reaper (which runs the
// host tools), the sandbox storage, the template store (and the base template), envd's runtime directory, cgroups,
// the network and the sandbox host. A start that fails part-way undoes what it did.
import { mkdir } from "node:fs/promises";
import { createCgroupManager } from "./cgroups/index.js";
import { resolveOrchestratorConfig, statePaths, type OrchestratorConfig } from "./config.js";
import { launcherBinaryPath } from "./launcher/index.js";
import type { LocalOrchestratorOptions } from "./local-orchestrator.js";
import { silentLogger, type Logger } from "./logger.js";
import { EgressService } from "./egress/egress-service.js";
import { parseUpstreams } from "./egress/dns-forwarder.js";
import { createNetworkManager } from "./network/index.js";
import { ensureReaper, reaperBinaryPath, reaperPaths, reaperPid, stopReaper, type ReaperPaths } from "./reaper/reaper.js";
import { reaperCommandRunner, type CommandRunner } from "./reaper/run-command.js";
import { ensureRuntime } from "./runtime.js";
import { SandboxHost } from "./sandbox-host.js";
import { openSandboxStorage, type SandboxStorage } from "./storage/disk-storage.js";
import { ensureBaseTemplate } from "./templates/base-template.js";
import { TemplateStore } from "./templates/template-store.js";
import type { CgroupManager, NetworkManager } from "./types.js";

export interface HostParts {
  config: Readonly<OrchestratorConfig>;
  logger: Logger;
  templates: TemplateStore;
  host: SandboxHost;
  cgroups: CgroupManager;
  network: NetworkManager;
  storage: SandboxStorage;
  /** Resolver, egress proxy, host services and egress audit (egress/). */
  egress: EgressService;
}

export async function openHostParts(opts: LocalOrchestratorOptions): Promise<HostParts> {
  const config = resolveOrchestratorConfig(opts.config);
  const logger = opts.logger ?? silentLogger;
  await mkdir(config.stateDir, { recursive: true });
  // The reaper first: it runs the host tools sandboxes need (btrfs, nft, ip), so creating one forks nothing here.
  const reaper = reaperPaths(config.stateDir);
  const launcher = launcherBinaryPath();
  // Nothing runs from this state directory yet (adoption comes later), so a failed start (a subnet already in use,
  // a broken base build) undoes what it did and leaves the host as it was: no mount, no empty cgroup parents, and
  // no reaper it started (one it started has no children: a previous reaper's sandboxes went to PID 1 with it).
  const undo: { what: string; step: () => Promise<void> | void }[] = [];
  if (reaperPid(reaper) === undefined) undo.push({ what: "stop the reaper", step: () => stopReaper(reaper) });
  try {
    await ensureReaper(reaper, { reaper: reaperBinaryPath(launcher), launcher });
    const runCommand = reaperCommandRunner(reaper);
    const storage = await openSandboxStorage({ stateDir: config.stateDir, preferred: config.storage, logger, runCommand });
    undo.push({ what: "unmount sandbox storage", step: () => storage.unmount() });
    return await assemble(opts, config, storage, logger, { reaper, runCommand }, undo);
  } catch (error) {
    for (const { what, step } of undo.reverse()) {
      await Promise.resolve()
        .then(step)
        .catch((err: unknown) => logger.error({ err }, `could not ${what} after a failed start`));
    }
    throw error;
  }
}

/** What is set up before any sandbox is touched; when it fails, openHostParts runs `undo` (newest first). */
async function assemble(
  opts: LocalOrchestratorOptions,
  config: Readonly<OrchestratorConfig>,
  storage: SandboxStorage,
  logger: Logger,
  tools: { reaper: ReaperPaths; runCommand: CommandRunner },
  undo: { what: string; step: () => Promise<void> | void }[],
): Promise<HostParts> {
  const paths = statePaths(config.stateDir);
  await mkdir(paths.sandboxes, { recursive: true });
  const templates = new TemplateStore(paths.templates, paths.layers);
  await templates.load();
  if (opts.buildBaseTemplate !== false) {
    await ensureBaseTemplate({ store: templates, config, onProgress: opts.onProgress, signal: opts.signal });
  }
  const runtime = await ensureRuntime({ runtimeRoot: paths.runtime, envd: opts.envd, signal: opts.signal });
  const cgroups = await createCgroupManager({ instance: config.instance, logger });
  undo.push({ what: "remove the instance's empty cgroup parents", step: () => cgroups.close() });
  const network = createNetworkManager({
    instance: config.instance,
    subnet: config.subnet,
    egressLimits: config.egressLimits,
    logger,
    runCommand: tools.runCommand,
  });
  await network.setup(opts.signal);
  const egress = new EgressService({ network, subnet: config.subnet, upstreams: parseUpstreams(config.dnsUpstream ?? ""), logger, relay: config.egressRelay });
  await egress.start(opts.signal);
  undo.push({ what: "stop the resolver and the egress proxy", step: () => egress.close() });
  for (const service of config.hostServices) await egress.registerHostService(service, opts.signal);
  const host = new SandboxHost({
    config,
    reaper: tools.reaper,
    storage,
    cgroups,
    network,
    runtimeDir: runtime.dir,
    runtimeCommand: runtime.command,
    layerPath: (layerId) => templates.layerPath(layerId),
    gateway: network.gateway,
    hostServices: egress.hostServices,
    trustedCa: () => egress.sandboxCaPem,
    logger,
  });
  return { config, logger, templates, host, cgroups, network, storage, egress };
}
