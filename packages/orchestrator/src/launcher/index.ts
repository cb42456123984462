export { launchSandbox, launcherArgs } from "./launch-sandbox.js";
export type { LaunchOptions, LaunchedSandbox } from "./launch-sandbox.js";
export { LaunchError } from "./launch-error.js";
export type { LaunchErrorCode } from "./launch-error.js";
export { parseLaunchReport } from "./launch-report.js";
export type { LaunchReport } from "./launch-report.js";
export { isSandboxInitAlive, readProcStat } from "./proc-stat.js";
export { launcherBinaryPath, buildNative } from "./launcher-binary.js";
export type { BuildNativeOptions } from "./launcher-binary.js";
