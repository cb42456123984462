// Templates Burrow ships by name (`desktop`, `browser`): a build definition that is built the first time a create
// asks for one of its names, then resolved like any other template. A version kept in the template's ENV makes a
// template built from an older definition rebuild when next asked for.
import type { BuildSpec, BuildStep } from "./builder/build-spec.js";
import type { BuildLogEntry } from "./builder/build-log.js";
import type { TemplateBuilder } from "./builder/template-builder.js";
import type { TemplateManifest, TemplateStore } from "./template-store.js";

export interface ShippedTemplate {
  /** The name it is built under; further names are aliases. */
  name: string;
  aliases: readonly string[];
  /** ENV variable holding the definition's version in the built template. */
  versionEnv: string;
  version: string;
  limits: { cpuCount: number; memoryMB: number };
  spec: () => BuildSpec;
  /** Keep a sandbox of it ready, its start command already run, once it is used (while the warm pool is on). */
  prestartInPool?: boolean;
}

export function isShippedTemplate(template: ShippedTemplate, ref: string): boolean {
  const name = ref.split(":")[0];
  return name === template.name || template.aliases.includes(name ?? "");
}

/** A RUN step that writes files (any bytes; base64 on the command line, so nothing needs quoting). */
export function writeFilesStep(files: readonly { path: string; content: string; mode: string }[]): BuildStep {
  const commands = files.map(({ path, content, mode }) => {
    const encoded = Buffer.from(content, "utf8").toString("base64");
    return `mkdir -p "$(dirname '${path}')" && printf '%s' '${encoded}' | base64 -d > '${path}' && chmod ${mode} '${path}'`;
  });
  return { type: "RUN", args: [commands.join(" && "), "root"], force: false };
}

/**
 * apt-get install without recommends, leaving no lists or caches in the layer. dpkg skips its fsync per file
 * (--force-unsafe-io): a build that dies half-way is thrown away anyway, and the syncs cost minutes on big installs.
 */
export function aptInstallStep(packages: readonly string[]): BuildStep {
  return {
    type: "RUN",
    args: [
      "apt-get update && DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes apt-get install -y --no-install-recommends " +
        "-o Dpkg::Options::=--force-unsafe-io " +
        `${packages.join(" ")} && apt-get clean && rm -rf /var/lib/apt/lists/*`,
      "root",
    ],
    force: false,
  };
}

function isCurrent(template: ShippedTemplate, manifest: TemplateManifest): boolean {
  return manifest.runtime?.env[template.versionEnv] === template.version;
}

/** Concurrent first uses of a template share one build (per builder and template name). */
const inFlight = new WeakMap<TemplateBuilder, Map<string, Promise<TemplateManifest>>>();

/** Wait for a shared build, giving up (without stopping it) when this caller's signal aborts. */
function waitFor<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/**
 * The template, building it when missing or built from an older definition. The build is shared by every caller
 * and outlives any one of them: a caller that gives up (its request timed out) stops waiting, not the build, so the
 * next create finds it done or nearly done.
 */
export async function ensureShippedTemplate(
  builder: TemplateBuilder,
  store: TemplateStore,
  template: ShippedTemplate,
  opts: { onLog?: (entry: BuildLogEntry) => void; signal?: AbortSignal | undefined } = {},
): Promise<TemplateManifest> {
  const existing = [template.name, ...template.aliases].map((name) => store.resolve(name)).find((m) => m !== undefined);
  if (existing && isCurrent(template, existing)) return existing;
  let builds = inFlight.get(builder);
  if (!builds) inFlight.set(builder, (builds = new Map()));
  const running = builds.get(template.name);
  if (running) return waitFor(running, opts.signal);
  const build = (async () => {
    const built = await builder.buildAndWait(template.name, template.spec(), {
      memoryMB: template.limits.memoryMB,
      ...(opts.onLog ? { onLog: opts.onLog } : {}),
    });
    // An outdated template that held an alias gives it up (and goes, unless it has other names).
    for (const old of store.list()) {
      if (old.templateId === built.templateId || !old.aliases.some((a) => template.aliases.includes(a))) continue;
      const aliases = old.aliases.filter((a) => !template.aliases.includes(a));
      if (aliases.length === 0) await builder.deleteTemplate(old.templateId);
      else await store.save({ ...old, aliases });
    }
    const manifest: TemplateManifest = {
      ...built,
      aliases: [...new Set([...built.aliases, template.name, ...template.aliases])],
      defaults: { ...built.defaults, ...template.limits },
    };
    await store.save(manifest);
    return manifest;
  })().finally(() => builds.delete(template.name));
  build.catch(() => undefined);
  builds.set(template.name, build);
  return waitFor(build, opts.signal);
}
