export { buildBaseRootfs, baseRootfsCachePath, DEFAULT_ROOTFS_CACHE_DIR } from "./build-base-rootfs.js";
export type { BuildBaseRootfsOptions } from "./build-base-rootfs.js";
export type { RootfsLogger } from "./run-command.js";
export { shiftOwnership } from "./shift-ownership.js";
export { buildRuntimeDir, parseLdd, runtimeCommand, RUNTIME_MOUNT } from "./build-runtime-dir.js";
export type { BuildRuntimeDirOptions } from "./build-runtime-dir.js";
