// One RUN or COPY step of a build, made into a new layer: RUN runs in a build sandbox over the layers below it and
// keeps what it changed, COPY unpacks the step's (verified) upload on the host. The layer is assembled in a
// temporary directory the build registers and committed under its id only when complete.
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { OrchestratorConfig } from "../../config.js";
import type { SandboxHost } from "../../sandbox-host.js";
import type { TemplateStore } from "../template-store.js";
import type { BuildLogLevel } from "./build-log.js";
import type { BuildRecord } from "./build-registry.js";
import type { BuildStep } from "./build-spec.js";
import { expandVars, runEnv, type BuildState } from "./build-state.js";
import type { BuildUploads } from "./build-uploads.js";
import { commitLayerDir, makeTmpLayerDir } from "./commit-layer.js";
import { runCopyStep } from "./copy-step.js";
import { runRunStep } from "./run-step.js";

/** Minimum memory for build sandboxes: apt and pip need more than a default sandbox. */
const BUILD_MIN_MEMORY_MB = 1024;

export interface BuildLayerDeps {
  store: TemplateStore;
  host: SandboxHost;
  config: Readonly<OrchestratorConfig>;
  uploads: BuildUploads;
}

/** Where a step runs: after which layers and in which state, and the layer it makes. */
export interface LayerStep {
  step: BuildStep;
  stepNo: string;
  /** The layers below, top first. */
  layers: string[];
  state: BuildState;
  layerId: string;
}

export async function buildLayer(deps: BuildLayerDeps, record: BuildRecord, at: LayerStep, signal: AbortSignal): Promise<void> {
  const { step, stepNo, layers, state, layerId } = at;
  const root = deps.store.layersRoot;
  const scratch = await makeTmpLayerDir(root, layerId);
  record.tmpDirs.add(scratch);
  const resultDir = join(scratch, "layer");
  const emit = (level: BuildLogLevel, line: string) => record.log.add(level, line, stepNo);
  if (step.type === "RUN") {
    const user = step.args[1] || state.user;
    await runRunStep({
      host: deps.host,
      buildId: record.buildId,
      layers,
      limits: { ...record.limits, memoryMB: Math.max(record.limits.memoryMB, BUILD_MIN_MEMORY_MB) },
      command: step.args[0] ?? "",
      user,
      workdir: state.workdir,
      env: runEnv(state),
      step: stepNo,
      onLine: (_stream, line) => emit("info", line),
      resultDir,
      signal,
    });
  } else {
    const hash = step.filesHash ?? "";
    const archive = deps.uploads.path(record.templateId, hash);
    await deps.uploads.verify(record, step, stepNo, archive);
    await mkdir(resultDir);
    const copied = await runCopyStep({
      archive,
      src: step.args[0] ?? "",
      dest: expandVars(step.args[1] ?? "", state),
      owner: step.args[2] || state.user,
      user: state.user,
      mode: step.args[3] ?? "",
      workdir: state.workdir,
      lowerDirs: layers.map((id) => deps.store.layerPath(id)),
      layerDir: resultDir,
      scratchDir: scratch,
      uidBase: deps.config.uidBase,
      step: stepNo,
    });
    emit("info", `copied ${copied.length} ${copied.length === 1 ? "entry" : "entries"}`);
  }
  await commitLayerDir(root, layerId, resultDir);
}
