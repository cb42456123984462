// The shipped `code-interpreter` definition: the base template plus Debian's Jupyter kernel and the usual
// data-science stack. Built the first time it is asked for, then resolved like any other template.
import type { BuildSpec } from "./builder/build-spec.js";
import type { BuildLogEntry } from "./builder/build-log.js";
import type { TemplateBuilder } from "./builder/template-builder.js";
import type { TemplateManifest, TemplateStore } from "./template-store.js";

export const CODE_INTERPRETER_ALIAS = "code-interpreter";

export const CODE_INTERPRETER_PACKAGES: readonly string[] = [
  "python3-ipykernel",
  "python3-numpy",
  "python3-pandas",
  "python3-matplotlib",
];

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
    ],
  };
}

/** Concurrent first uses share one build (per builder). */
const inFlight = new WeakMap<TemplateBuilder, Promise<TemplateManifest>>();

/** The code-interpreter template, building it on first use. Call when a create asks for `code-interpreter`. */
export async function ensureCodeInterpreterTemplate(
  builder: TemplateBuilder,
  store: TemplateStore,
  opts: { onLog?: (entry: BuildLogEntry) => void; signal?: AbortSignal } = {},
): Promise<TemplateManifest> {
  const existing = store.resolve(CODE_INTERPRETER_ALIAS);
  if (existing) return existing;
  const running = inFlight.get(builder);
  if (running) return running;
  const build = builder
    .buildAndWait(CODE_INTERPRETER_ALIAS, codeInterpreterSpec(), {
      memoryMB: 1024,
      ...(opts.onLog ? { onLog: opts.onLog } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
    })
    .finally(() => inFlight.delete(builder));
  inFlight.set(builder, build);
  return build;
}
