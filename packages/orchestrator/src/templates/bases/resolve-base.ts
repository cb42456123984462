// Where a build starts: its layers, the state its steps inherit, and an identity for the cache key.
import { isAbsolute } from "node:path";
import type { OrchestratorConfig } from "../../config.js";
import type { BuildState } from "../builder/build-state.js";
import type { BuildSpec } from "../builder/build-spec.js";
import { TemplateBuildError } from "../builder/template-build-error.js";
import { BASE_TEMPLATE_ALIAS } from "../base-template.js";
import type { TemplateStore } from "../template-store.js";
import { debianSuiteOf, ensureDebianSuiteLayer } from "./debian-suite.js";
import { checkImagePath } from "./image-path-policy.js";
import { importImage } from "./oci-image.js";
import { pullImage } from "./registry-image.js";
import { join } from "node:path";
import { Code } from "@burrow/protocol";
import { BASE_SUITE } from "../../rootfs/base-recipe.js";

export interface ResolvedBase {
  layers: string[];
  identity: string;
  state: BuildState;
  /** For the log: what the base turned out to be. */
  description: string;
}

export interface BaseDeps {
  store: TemplateStore;
  config: Readonly<OrchestratorConfig>;
  log: (message: string) => void;
  signal?: AbortSignal | undefined;
}

/** The SDK's default image (`Template()` without a from*) and its alias; here it is the base template. */
const E2B_BASE_IMAGES = /^(?:docker\.io\/)?e2bdev\/(?:base|code-interpreter)(?::[\w.-]+)?$/;
const IMAGE_PATH_PREFIXES = ["oci:", "oci-archive:", "docker-archive:"];

export const SUPPORTED_BASES_HINT =
  "bases that work on this server: debian:<suite> (e.g. debian:bookworm, debian:trixie; built with debootstrap), " +
  "e2bdev/base, registry images (python:3.12-slim, ghcr.io/org/image:tag), fromTemplate(<name or id>), or a local OCI image layout / OCI or docker-archive tarball by absolute path " +
  "under the server's image directory (BURROW_IMAGE_DIR; e.g. fromImage('oci-archive:/srv/images/image.tar'))";

const defaultState = (): BuildState => ({ user: "user", env: {}, args: {}, workdir: undefined });

export async function resolveBase(spec: BuildSpec, deps: BaseDeps): Promise<ResolvedBase> {
  if (spec.fromTemplate !== undefined) {
    const manifest = deps.store.resolve(spec.fromTemplate);
    if (!manifest) {
      throw new TemplateBuildError(Code.NotFound, `base template '${spec.fromTemplate}' not found`, { step: "base" });
    }
    const runtime = manifest.runtime;
    return {
      layers: [...manifest.layers],
      identity: `template:${manifest.layers.join(",")}`,
      state: runtime ? { user: runtime.user, workdir: runtime.workdir, env: { ...runtime.env }, args: {} } : defaultState(),
      description: `template ${spec.fromTemplate} (${manifest.templateId})`,
    };
  }
  const image = (spec.fromImage ?? "e2bdev/base").trim();
  const path = imagePath(image);
  if (path !== undefined) {
    const allowed = await checkImagePath(path, deps.config);
    const imported = await importImage(allowed, {
      layersRoot: deps.store.layersRoot,
      uidBase: deps.config.uidBase,
      uidCount: deps.config.uidCount,
      log: deps.log,
      signal: deps.signal,
    });
    return {
      layers: imported.layers,
      identity: imported.identity,
      state: { user: imported.config.user ?? "root", workdir: imported.config.workdir, env: imported.config.env, args: {} },
      description: `image ${path} (${imported.layers.length} layers)`,
    };
  }
  const suite = E2B_BASE_IMAGES.test(image) ? BASE_SUITE : debianSuiteOf(image);
  if (suite === BASE_SUITE) return baseTemplateBase(deps, image);
  if (suite !== undefined) {
    const layerId = await ensureDebianSuiteLayer(suite, {
      layersRoot: deps.store.layersRoot,
      uidBase: deps.config.uidBase,
      uidCount: deps.config.uidCount,
      log: deps.log,
      signal: deps.signal,
    });
    return { layers: [layerId], identity: `debian:${layerId}`, state: defaultState(), description: `debian:${suite}` };
  }
  const pulled = await pullImage(image, {
    layersRoot: deps.store.layersRoot,
    uidBase: deps.config.uidBase,
    uidCount: deps.config.uidCount,
    log: deps.log,
    signal: deps.signal,
    registries: deps.config.registries,
    credentials: spec.fromImageRegistry,
    configCacheDir: join(deps.config.stateDir, "image-configs"),
  });
  return {
    layers: pulled.layers,
    identity: pulled.identity,
    state: { user: pulled.config.user ?? "root", workdir: pulled.config.workdir, env: pulled.config.env, args: {} },
    description: `image ${pulled.reference} (${pulled.layers.length} layers)`,
  };
}

function baseTemplateBase(deps: BaseDeps, image: string): ResolvedBase {
  const base = deps.store.resolve(BASE_TEMPLATE_ALIAS);
  if (!base) throw new TemplateBuildError(Code.FailedPrecondition, "the base template is not built yet", { step: "base" });
  return {
    layers: [...base.layers],
    identity: `template:${base.layers.join(",")}`,
    state: defaultState(),
    description: `${image} → base template (Debian ${BASE_SUITE})`,
  };
}

/** A local image reference: `oci:/p`, `oci-archive:/p`, `docker-archive:/p`, or an absolute path. */
export function imagePath(image: string): string | undefined {
  for (const prefix of IMAGE_PATH_PREFIXES) {
    // A trailing `:tag` (as skopeo writes oci:/dir:tag) names the image in a multi-image layout; one is used.
    if (image.startsWith(prefix)) return image.slice(prefix.length).replace(/:[^/:]*$/, "");
  }
  return isAbsolute(image) ? image : undefined;
}
