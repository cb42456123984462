// The shipped code-interpreter template, under the name the official `@e2b/code-interpreter` SDK asks for
// (`code-interpreter-v1`, with `code-interpreter` as an alias): the base template plus Debian's Jupyter kernel
// and the usual data-science stack. Built the first time it is asked for, then resolved like any other template.
// The execution server itself is not in the template: it runs from the read-only runtime mount
// (/.burrow/code-interpreter, with the runtime's node), so the template only carries the Python side.
//
// Once the template is in use, the warm pool keeps sandboxes of it with the execution server and its default
// kernels already started (prestartInPool), so a create plus the first run costs about a create. That is safe
// because the server holds nothing a create sets: it asks envd for the sandbox's variables with each caller's token
// (so a token set by the claim's /init is checked at once, and the create's env vars reach every kernel before its
// first run), and nothing has run in the kernels before the sandbox is handed out.
import { CODE_INTERPRETER_PORT, RUNTIME_MOUNT } from "@burrow/protocol";
import { runtimeNodeCommand } from "../rootfs/build-runtime-dir.js";
import type { BuildSpec } from "./builder/build-spec.js";
import type { BuildLogEntry } from "./builder/build-log.js";
import type { TemplateBuilder } from "./builder/template-builder.js";
import { aptInstallStep, ensureShippedTemplate, isShippedTemplate, type ShippedTemplate } from "./shipped-template.js";
import type { TemplateManifest, TemplateStore } from "./template-store.js";

/** The name the official SDK uses (`Sandbox.defaultTemplate`). */
export const CODE_INTERPRETER_TEMPLATE = "code-interpreter-v1";
/** The shorter name Burrow shipped first; kept as an alias. */
export const CODE_INTERPRETER_ALIAS = "code-interpreter";

export { CODE_INTERPRETER_PORT };

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

export function codeInterpreterSpec(): BuildSpec {
  return {
    fromTemplate: "base",
    force: false,
    steps: [
      aptInstallStep(CODE_INTERPRETER_PACKAGES),
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

export const CODE_INTERPRETER: ShippedTemplate = {
  name: CODE_INTERPRETER_TEMPLATE,
  aliases: [CODE_INTERPRETER_ALIAS],
  versionEnv: CODE_INTERPRETER_VERSION_ENV,
  version: CODE_INTERPRETER_VERSION,
  limits: CODE_INTERPRETER_LIMITS,
  spec: codeInterpreterSpec,
  prestartInPool: true,
};

export function isCodeInterpreterTemplate(ref: string): boolean {
  return isShippedTemplate(CODE_INTERPRETER, ref);
}

/**
 * The code-interpreter template (by either name), building it when missing or built from an older definition.
 * The build is shared by every caller and outlives any one of them (see ensureShippedTemplate).
 */
export function ensureCodeInterpreterTemplate(
  builder: TemplateBuilder,
  store: TemplateStore,
  opts: { onLog?: (entry: BuildLogEntry) => void; signal?: AbortSignal | undefined } = {},
): Promise<TemplateManifest> {
  return ensureShippedTemplate(builder, store, CODE_INTERPRETER, opts);
}
