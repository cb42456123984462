// Which kernel a language gets: python (and any other installed Jupyter kernelspec) over ZeroMQ, JavaScript and
// TypeScript as Node workers, bash as a driven shell.
import { join } from "node:path";
import type { Logger } from "../log.js";
import { BashKernel } from "./bash/bash-kernel.js";
import { JupyterKernel, type EnvSnippets } from "./jupyter/jupyter-kernel.js";
import { findKernelSpecs, kernelSpecFor, type KernelSpec } from "./jupyter/kernelspec.js";
import type { Kernel, StartKernelOptions } from "./kernel.js";
import { NodeKernel } from "./node/node-kernel.js";

export interface KernelPaths {
  /** argv that starts Node for JavaScript/TypeScript contexts. */
  nodeCommand: string[];
  workerScript: string;
  /** Directory holding the burrow_kernel IPython extension and kernel_config.py. */
  pythonDir: string;
  /** Private directory for connection files, sockets and cell files. */
  runDir: string;
}

const PYTHON_ENV: EnvSnippets = {
  set: (json) => `__import__("burrow_kernel")._env_set(${json})`,
  push: (json) => `__import__("burrow_kernel")._env_push(${json})`,
  pop: () => `__import__("burrow_kernel")._env_pop()`,
};

const NATIVE_LANGUAGES = new Set(["javascript", "typescript", "bash"]);

export class KernelLauncher {
  #specs: KernelSpec[] | undefined;

  constructor(
    private readonly paths: KernelPaths,
    private readonly logger: Logger,
  ) {}

  /** Whether contexts of this (normalised) language can be created here. */
  supports(language: string): boolean {
    return NATIVE_LANGUAGES.has(language) || this.#spec(language) !== undefined;
  }

  languages(): string[] {
    return [...new Set(["python", ...NATIVE_LANGUAGES, ...this.#allSpecs().map((s) => s.language)])].filter((l) => this.supports(l));
  }

  async start(opts: StartKernelOptions): Promise<Kernel> {
    const { language } = opts;
    if (language === "javascript" || language === "typescript") {
      return NodeKernel.start({ ...opts, nodeCommand: this.paths.nodeCommand, workerScript: this.paths.workerScript });
    }
    if (language === "bash") return BashKernel.start({ ...opts, runDir: this.paths.runDir });
    const spec = this.#spec(language);
    if (!spec) throw new Error(`no kernel is installed for language '${language}'`);
    const python = spec.language === "python";
    return JupyterKernel.start({
      ...opts,
      spec,
      runDir: this.paths.runDir,
      logger: this.logger,
      ...(python
        ? {
            extraArgs: [`--config=${join(this.paths.pythonDir, "kernel_config.py")}`],
            extraEnv: {
              PYTHONPATH: [this.paths.pythonDir, opts.env.PYTHONPATH].filter(Boolean).join(":"),
              // ipykernel's debugger otherwise warns about frozen modules on every start
              PYDEVD_DISABLE_FILE_VALIDATION: "1",
            },
            envSnippets: PYTHON_ENV,
          }
        : {}),
    });
  }

  #allSpecs(): KernelSpec[] {
    this.#specs ??= findKernelSpecs();
    return this.#specs;
  }

  #spec(language: string): KernelSpec | undefined {
    return kernelSpecFor(language, this.#allSpecs());
  }
}
