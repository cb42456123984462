// What the orchestrator of one machine is assembled from, brought up in order at start: the reaper (which runs the
// host tools), the sandbox storage, the template store (and the base template), envd's runtime directory, cgroups,
// the network and the sandbox host. A start that fails part-way leaves the disk image unmounted.
import { mkdir } from "node:fs/promises";
import { createCgroupManager } from "./cgroups/index.js";
import { resolveOrchestratorConfig, statePaths, type OrchestratorConfig } from "./config.js";
import { launcherBinaryPath } from "./launcher/index.js";
import type { LocalOrchestratorOptions } from "./local-orchestrator.js";
import { silentLogger, type Logger } from "./logger.js";
import { createNetworkManager } from "./network/index.js";
import { ensureReaper, reaperBinaryPath, reaperPaths, type ReaperPaths } from "./reaper/reaper.js";
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
}

export async function openHostParts(opts: LocalOrchestratorOptions): Promise<HostParts> {
  const config = resolveOrchestratorConfig(opts.config);
  const logger = opts.logger ?? silentLogger;
  await mkdir(config.stateDir, { recursive: true });
  // The reaper first: it runs the host tools sandboxes need (btrfs, nft, ip), so creating one forks nothing here.
  const reaper = reaperPaths(config.stateDir);
  const launcher = launcherBinaryPath();
  await ensureReaper(reaper, { reaper: reaperBinaryPath(launcher), launcher });
  const runCommand = reaperCommandRunner(reaper);
  const storage = await openSandboxStorage({ stateDir: config.stateDir, preferred: config.storage, logger, runCommand });
  try {
    return await assemble(opts, config, storage, logger, { reaper, runCommand });
  } catch (error) {
    // Nothing runs from this state directory yet (adoption comes later): leave the host as it was, with the
    // disk image unmounted, so a failed start (a subnet already in use, a broken base build) leaves no mount.
    await storage.unmount().catch((err: unknown) => logger.error({ err }, "could not unmount sandbox storage after a failed start"));
    throw error;
  }
}

/** What is set up before any sandbox is touched; when it fails, openHostParts unmounts the storage again. */
async function assemble(
  opts: LocalOrchestratorOptions,
  config: Readonly<OrchestratorConfig>,
  storage: SandboxStorage,
  logger: Logger,
  tools: { reaper: ReaperPaths; runCommand: CommandRunner },
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
  const network = createNetworkManager({
    instance: config.instance,
    subnet: config.subnet,
    logger,
    runCommand: tools.runCommand,
  });
  await network.setup(opts.signal);
  const host = new SandboxHost({
    config,
    reaper: tools.reaper,
    storage,
    cgroups,
    network,
    runtimeDir: runtime.dir,
    runtimeCommand: runtime.command,
    layerPath: (layerId) => templates.layerPath(layerId),
    logger,
  });
  return { config, logger, templates, host, cgroups, network, storage };
}
