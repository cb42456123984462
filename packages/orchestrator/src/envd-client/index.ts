// The one client for envd's protocol, used by the orchestrator (launch, template builds, start commands) and the
// server (bus runner, watches). Every call takes an EnvdTarget resolved by its caller and an AbortSignal.
export { envdAt, envdBaseUrl, type EnvdTarget } from "./envd-target.js";
export { envdErrorFrom } from "./envd-error.js";
export { streamProcess, type ProcessSpec, type ProcessEvent, type OutputStream } from "./process-stream.js";
export { runProcess, type ProcessResult } from "./run-process.js";
export { startBackgroundProcess, type BackgroundProcess } from "./background-process.js";
export { sendSignal } from "./send-signal.js";
export { watchDir, type DirEvent, type DirEventType, type WatchDirOptions } from "./watch-dir.js";
export { readFile, writeFile, type FileOptions } from "./files.js";
export { waitForEnvd } from "./health.js";
export { initEnvd, type EnvdInit } from "./init.js";
