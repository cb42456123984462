export { createCgroupManager } from "./cgroup-manager.js";
export type { BurrowCgroupManager, CgroupLogger, CgroupManagerOptions } from "./cgroup-manager.js";
export type { CgroupLayoutKind } from "./layout.js";
