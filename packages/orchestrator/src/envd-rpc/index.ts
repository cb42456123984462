export {
  runEnvdCommand,
  startEnvdCommand,
  EnvdCommandError,
  type EnvdTarget,
  type EnvdCommand,
  type CommandResult,
  type BackgroundCommand,
  type OutputStream,
} from "./envd-process.js";
