// The step runner of one build: resolves the base, walks the steps (state steps in memory, RUN and COPY each into a
// content-addressed layer, reused when the cache has it), publishes the template at the end, and records the
// outcome (status, failure reason with the log's tail) on the build. Never rejects.
import { Code } from "@burrow/protocol";
import type { Logger } from "../../logger.js";
import { removeTree } from "../../storage/remove-tree.js";
import { resolveBase } from "../bases/resolve-base.js";
import { templateReadyTimeoutMs } from "../start-template-process.js";
import type { TemplateRuntime } from "../template-store.js";
import { buildLayer, type BuildLayerDeps } from "./build-layer.js";
import { inSpan } from "../../tracing.js";
import type { BuildRecord } from "./build-registry.js";
import type { BuildSpec, BuildStep } from "./build-spec.js";
import { applyStateStep, baseKey, expandVars, layerIdForKey, stepKey, type BuildState } from "./build-state.js";
import { layerExists } from "./commit-layer.js";
import { copyCacheKeyInput } from "./copy-step.js";
import type { ManifestUpdates } from "./manifest-updates.js";
import { TemplateBuildError } from "./template-build-error.js";

export interface RunBuildDeps extends BuildLayerDeps {
  manifests: ManifestUpdates;
  logger: Logger;
}

export function runBuild(deps: RunBuildDeps, record: BuildRecord, spec: BuildSpec): Promise<void> {
  return inSpan("template.build", () => runBuildTraced(deps, record, spec), { "burrow.template_id": record.templateId, "burrow.build_id": record.buildId });
}

async function runBuildTraced(deps: RunBuildDeps, record: BuildRecord, spec: BuildSpec): Promise<void> {
  const { log } = record;
  const signal = record.controller.signal;
  let currentStep = "base";
  try {
    log.add("info", `Building template ${record.templateId} (build ${record.buildId})`, "base");
    const base = await inSpan("template.base", () =>
      resolveBase(spec, {
        store: deps.store,
        config: deps.config,
        log: (message) => log.add("info", message, "base"),
        signal,
      }),
    );
    log.add("info", `Base: ${base.description}`, "base");
    let key = baseKey(base.identity, spec.force);
    let layers = [...base.layers];
    for (const id of layers) record.layers.add(id);
    let state: BuildState = base.state;
    const total = spec.steps.length;
    for (const [index, step] of spec.steps.entries()) {
      signal.throwIfAborted();
      currentStep = String(index + 1);
      const contentDigest =
        step.type === "COPY"
          ? copyCacheKeyInput(await deps.uploads.digest(record, step, String(index + 1)), expandVars(step.args[1] ?? "", state), state.workdir)
          : undefined;
      const nextKey = stepKey(key, step, state, contentDigest);
      const title = `[${currentStep}/${total}] ${step.type} ${describeArgs(step)}`;
      if (step.type !== "RUN" && step.type !== "COPY") {
        state = applyStateStep(state, step);
        key = nextKey;
        log.add("info", title, currentStep);
        continue;
      }
      const layerId = layerIdForKey(nextKey);
      record.layers.add(layerId);
      if (await layerExists(deps.store.layersRoot, layerId)) {
        log.add("info", `CACHED ${title}`, currentStep);
        record.counters.stepsCached++;
      } else {
        log.add("info", title, currentStep);
        const [stepNo, stepLayers, stepState] = [currentStep, layers, state];
        await inSpan("template.step", () => buildLayer(deps, record, { step, stepNo, layers: stepLayers, state: stepState, layerId }, signal), {
          "burrow.step": title,
        });
        record.counters.stepsRun++;
      }
      layers = [layerId, ...layers];
      key = nextKey;
    }
    currentStep = "finalize";
    const runtime: TemplateRuntime = {
      env: { ...state.env },
      user: state.user,
      workdir: state.workdir,
      startCmd: spec.startCmd,
      readyCmd: spec.readyCmd,
    };
    // A bad ready timeout fails the build rather than every create from the template.
    try {
      templateReadyTimeoutMs(runtime.env);
    } catch (error) {
      throw new TemplateBuildError(Code.InvalidArgument, (error as Error).message, { step: "finalize" });
    }
    await deps.manifests.publish(record, layers, runtime);
    record.status = "ready";
    record.finishedAt = new Date().toISOString();
    log.add("info", `Template ${record.name} ready (${record.counters.stepsRun} steps run, ${record.counters.stepsCached} cached)`, "finalize");
  } catch (error) {
    const failure =
      error instanceof TemplateBuildError
        ? error
        : signal.aborted
          ? new TemplateBuildError(Code.Canceled, "build canceled", { step: currentStep, cause: error })
          : new TemplateBuildError(Code.Internal, (error as Error).message, { step: currentStep, cause: error });
    const step = failure.step ?? currentStep;
    log.add("error", failure.message, step);
    record.reason = { message: failure.message, step, logEntries: log.tail(20) };
    record.status = "error";
    record.finishedAt = new Date().toISOString();
    if (failure.code === Code.Internal) deps.logger.error({ err: error, buildId: record.buildId }, "template build failed");
  } finally {
    // What will not go now is a temporary directory of no running build: garbage collection retries it.
    for (const dir of record.tmpDirs) {
      await removeTree(dir).catch((error: unknown) => deps.logger.warn({ dir, err: error }, "could not remove a build's temporary directory"));
    }
    record.tmpDirs.clear();
  }
}

function describeArgs(step: BuildStep): string {
  if (step.type === "RUN") return step.args[0] ?? "";
  if (step.type === "COPY") return `${step.args[0] ?? ""} ${step.args[1] ?? ""}`;
  if (step.type === "ENV" || step.type === "ARG") {
    const pairs: string[] = [];
    for (let i = 0; i + 1 < step.args.length; i += 2) pairs.push(`${step.args[i]}=${step.args[i + 1]}`);
    return pairs.join(" ");
  }
  return step.args.join(" ");
}
