// The `base` template: Debian bookworm built with debootstrap on first use, then kept as a layer.
import { existsSync } from "node:fs";
import type { OrchestratorConfig } from "../config.js";
import { randomId } from "../ids.js";
import { buildBaseRootfs } from "../rootfs/index.js";
import type { TemplateStore } from "./template-store.js";

export const BASE_TEMPLATE_ALIAS = "base";

export async function ensureBaseTemplate(opts: {
  store: TemplateStore;
  config: Readonly<OrchestratorConfig>;
  onProgress?: ((line: string) => void) | undefined;
  signal?: AbortSignal | undefined;
}): Promise<void> {
  const { store, config } = opts;
  const existing = store.resolve(BASE_TEMPLATE_ALIAS);
  if (existing && existing.layers.every((layerId) => existsSync(store.layerPath(layerId)))) return;
  const layerId = randomId();
  opts.onProgress?.("building the base template (Debian bookworm); the first build takes a few minutes");
  await buildBaseRootfs({
    cacheDir: config.cacheDir,
    outDir: store.layerPath(layerId),
    uidBase: config.uidBase,
    signal: opts.signal,
    log: (line: string) => opts.onProgress?.(line),
  });
  await store.save({
    templateId: existing?.templateId ?? randomId(),
    aliases: [BASE_TEMPLATE_ALIAS],
    layers: [layerId],
    defaults: { ...config.defaultLimits },
    createdAt: new Date().toISOString(),
  });
}
