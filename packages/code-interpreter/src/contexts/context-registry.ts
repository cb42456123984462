// All contexts of the server: created on request or as a language's default (python and javascript exist from
// the start; others are created the first time a run names the language), listed, restarted, removed.
import { randomUUID } from "node:crypto";
import { stat } from "node:fs/promises";
import { BurrowError, Code } from "@burrow/protocol/errors";
import { normalizeLanguage } from "../language.js";
import type { Logger } from "../log.js";
import type { Kernel, StartKernelOptions } from "../kernels/kernel.js";
import { CodeContext, type ContextInfo } from "./code-context.js";

export interface ContextRegistryOptions {
  startKernel: (opts: StartKernelOptions) => Promise<Kernel>;
  supports: (language: string) => boolean;
  defaultCwd: string;
  baseEnv: () => Record<string, string>;
  interruptGraceMs: number;
  maxContexts: number;
  logger: Logger;
}

export class ContextRegistry {
  readonly #opts: ContextRegistryOptions;
  readonly #contexts = new Map<string, CodeContext>();
  /** The default context of each language, created once (concurrent first uses share the creation). */
  readonly #defaults = new Map<string, Promise<CodeContext>>();

  constructor(opts: ContextRegistryOptions) {
    this.#opts = opts;
  }

  async create(input: { language?: string | null | undefined; cwd?: string | null | undefined }, signal?: AbortSignal): Promise<CodeContext> {
    const language = normalizeLanguage(input.language);
    if (!this.#opts.supports(language)) {
      throw new BurrowError(Code.InvalidArgument, `language '${language}' is not available in this sandbox`);
    }
    const cwd = input.cwd?.trim() || this.#opts.defaultCwd;
    const info = await stat(cwd).catch(() => undefined);
    if (!info?.isDirectory()) throw new BurrowError(Code.InvalidArgument, `cwd '${cwd}' is not an existing directory`);
    if (this.#contexts.size >= this.#opts.maxContexts) {
      throw new BurrowError(Code.ResourceExhausted, `at most ${this.#opts.maxContexts} contexts may exist at once; remove one first`);
    }
    const context = new CodeContext(randomUUID(), language, cwd, {
      startKernel: this.#opts.startKernel,
      baseEnv: this.#opts.baseEnv,
      interruptGraceMs: this.#opts.interruptGraceMs,
      logger: this.#opts.logger,
    });
    this.#contexts.set(context.id, context);
    try {
      await context.start(signal);
    } catch (error) {
      this.#contexts.delete(context.id);
      await context.close().catch(() => undefined);
      throw new BurrowError(Code.Internal, `failed to start the ${language} kernel: ${(error as Error).message}`, { cause: error });
    }
    return context;
  }

  get(id: string): CodeContext | undefined {
    return this.#contexts.get(id);
  }

  require(id: string): CodeContext {
    const context = this.#contexts.get(id);
    if (!context) throw new BurrowError(Code.NotFound, `Context ${id} not found`);
    return context;
  }

  list(): ContextInfo[] {
    return [...this.#contexts.values()].map((c) => c.info());
  }

  /** The context a run naming only a language goes to. */
  async defaultFor(language: string | null | undefined): Promise<CodeContext> {
    const name = normalizeLanguage(language);
    const existing = this.#defaults.get(name);
    if (existing) {
      const context = await existing.catch(() => undefined);
      if (context && this.#contexts.has(context.id)) return context;
      if (this.#defaults.get(name) === existing) this.#defaults.delete(name);
      return this.defaultFor(name);
    }
    const creating = this.create({ language: name });
    this.#defaults.set(name, creating);
    creating.catch(() => {
      if (this.#defaults.get(name) === creating) this.#defaults.delete(name);
    });
    return creating;
  }

  async restart(id: string, signal?: AbortSignal): Promise<void> {
    const context = this.require(id);
    try {
      await context.restart(signal);
    } catch (error) {
      throw new BurrowError(Code.Internal, `restarting context ${id} failed: ${(error as Error).message}`, { cause: error });
    }
  }

  async remove(id: string): Promise<void> {
    const context = this.require(id);
    this.#contexts.delete(id);
    await context.close();
  }

  async close(): Promise<void> {
    const all = [...this.#contexts.values()];
    this.#contexts.clear();
    await Promise.allSettled(all.map((c) => c.close()));
  }
}
