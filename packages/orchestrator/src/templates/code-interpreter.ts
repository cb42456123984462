// The shipped code-interpreter template, under the name the official `@e2b/code-interpreter` SDK asks for
// (`code-interpreter-v1`, with `code-interpreter` as an alias): the base template plus Debian's Jupyter kernel
// and the usual data-science stack. Built the first time it is asked for, then resolved like any other template.
// The execution server itself is not in the template: it runs from the read-only runtime mount
// (/.burrow/code-interpreter, with the runtime's node), so the template only carries the Python side.
import { RUNTIME_MOUNT } from "@burrow/protocol";
import { runtimeNodeCommand } from "../rootfs/build-runtime-dir.js";
import type { BuildSpec } from "./builder/build-spec.js";
import type { BuildLogEntry } from "./builder/build-log.js";
import type { TemplateBuilder } from "./builder/template-builder.js";
import type { TemplateManifest, TemplateStore } from "./template-store.js";

/** The name the official SDK uses (`Sandbox.defaultTemplate`). */
export const CODE_INTERPRETER_TEMPLATE = "code-interpreter-v1";
/** The shorter name Burrow shipped first; kept as an alias. */
export const CODE_INTERPRETER_ALIAS = "code-interpreter";

/** Port of the execution server in these sandboxes (the SDKs' JUPYTER_PORT). */
export const CODE_INTERPRETER_PORT = 49999;

/**
 * Version of this definition, kept in the template's ENV. A template built from an older definition (or the
 * first `code-interpreter`, which had no execution server) is rebuilt when next asked for.
 */
export const CODE_INTERPRETER_VERSION_ENV = "BURROW_CODE_INTERPRETER_TEMPLATE";
const CODE_INTERPRETER_VERSION = "1";

/** E2B's code-interpreter sandboxes have 2 vCPUs and 2 GB by default; so do Burrow's. */
export const CODE_INTERPRETER_LIMITS = { cpuCount: 2, memoryMB: 2048 } as const;

export const CODE_INTERPRETER_PACKAGES: readonly string[] = [
  "python3-ipykernel",
  "python3-numpy",
  "python3-pandas",
  "python3-matplotlib",
  "python3-pil",
];

/** Where the execution server lies in the runtime mount. */
export const CODE_INTERPRETER_SERVER = `${RUNTIME_MOUNT}/code-interpreter/server.mjs`;

export function isCodeInterpreterTemplate(ref: string): boolean {
  const name = ref.split(":")[0];
  return name === CODE_INTERPRETER_TEMPLATE || name === CODE_INTERPRETER_ALIAS;
}

export function codeInterpreterSpec(): BuildSpec {
  return {
    fromTemplate: "base",
    force: false,
    steps: [
      {
        type: "RUN",
        args: [
          "apt-get update && DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes apt-get install -y --no-install-recommends " +
            `${CODE_INTERPRETER_PACKAGES.join(" ")} && apt-get clean && rm -rf /var/lib/apt/lists/*`,
          "root",
        ],
        force: false,
      },
      { type: "USER", args: ["user"], force: false },
      { type: "WORKDIR", args: ["/home/user"], force: false },
      // matplotlib builds its font cache on first import (seconds): done once here instead of in every sandbox.
      { type: "RUN", args: ["MPLBACKEND=agg python3 -c 'import matplotlib.pyplot'", "user"], force: false },
      { type: "ENV", args: [CODE_INTERPRETER_VERSION_ENV, CODE_INTERPRETER_VERSION], force: false },
    ],
    startCmd: `exec ${runtimeNodeCommand(CODE_INTERPRETER_SERVER).join(" ")}`,
    readyCmd: `curl -sf -o /dev/null http://127.0.0.1:${CODE_INTERPRETER_PORT}/health`,
  };
}

function isCurrent(manifest: TemplateManifest): boolean {
  return manifest.runtime?.env[CODE_INTERPRETER_VERSION_ENV] === CODE_INTERPRETER_VERSION;
}

/** Concurrent first uses share one build (per builder). */
const inFlight = new WeakMap<TemplateBuilder, Promise<TemplateManifest>>();

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
 * The code-interpreter template (by either name), building it when missing or built from an older definition.
 * Call when a create asks for `code-interpreter-v1` or `code-interpreter`. The build is shared by every caller
 * and outlives any one of them: a caller that gives up (its request timed out) stops waiting, not the build, so
 * the next create finds it done or nearly done.
 */
export async function ensureCodeInterpreterTemplate(
  builder: TemplateBuilder,
  store: TemplateStore,
  opts: { onLog?: (entry: BuildLogEntry) => void; signal?: AbortSignal | undefined } = {},
): Promise<TemplateManifest> {
  const existing = store.resolve(CODE_INTERPRETER_TEMPLATE) ?? store.resolve(CODE_INTERPRETER_ALIAS);
  if (existing && isCurrent(existing)) return existing;
  const running = inFlight.get(builder);
  if (running) return waitFor(running, opts.signal);
  const build = (async () => {
    const built = await builder.buildAndWait(CODE_INTERPRETER_TEMPLATE, codeInterpreterSpec(), {
      memoryMB: CODE_INTERPRETER_LIMITS.memoryMB,
      ...(opts.onLog ? { onLog: opts.onLog } : {}),
    });
    // An outdated template that held the alias gives it up (and goes, unless it has other names).
    for (const old of store.list()) {
      if (old.templateId === built.templateId || !old.aliases.includes(CODE_INTERPRETER_ALIAS)) continue;
      const aliases = old.aliases.filter((a) => a !== CODE_INTERPRETER_ALIAS);
      if (aliases.length === 0) await builder.deleteTemplate(old.templateId);
      else await store.save({ ...old, aliases });
    }
    const manifest: TemplateManifest = {
      ...built,
      aliases: [...new Set([...built.aliases, CODE_INTERPRETER_TEMPLATE, CODE_INTERPRETER_ALIAS])],
      defaults: { ...built.defaults, ...CODE_INTERPRETER_LIMITS },
    };
    await store.save(manifest);
    return manifest;
  })().finally(() => inFlight.delete(builder));
  build.catch(() => undefined);
  inFlight.set(builder, build);
  return waitFor(build, opts.signal);
}
