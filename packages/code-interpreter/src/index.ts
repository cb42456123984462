export { CODE_INTERPRETER_PORT, resolveConfig, type CodeInterpreterConfig } from "./config.js";
export { createCodeInterpreter, type CodeInterpreter } from "./code-interpreter.js";
export { codeInterpreterRuntimeFiles, RUNTIME_PROGRAM_NAME, type RuntimeProgram } from "./runtime-files.js";
export { normalizeLanguage } from "./language.js";
export { createStderrLogger, silentLogger, type Logger } from "./log.js";
export { TIMEOUT_HEADER } from "./http/execute-route.js";
export type { ExecutionItem } from "./contexts/execution-item.js";
export { startLocalKernel, type LocalKernel } from "./local-kernel.js";
export type { Kernel, KernelEvent } from "./kernels/kernel.js";
