export { createCgroupManager } from "./cgroup-manager.js";
export type { BurrowCgroupManager, CgroupLogger, CgroupManagerOptions } from "./cgroup-manager.js";
export { CgroupError } from "./cgroup-error.js";
export type { CgroupErrorCode } from "./cgroup-error.js";
export type { CgroupLayoutKind } from "./layout.js";
