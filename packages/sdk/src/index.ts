// The Burrow SDK: the official e2b SDK for sandboxes, plus Burrow's own APIs.
export { Sandbox, CommandExitError, type SandboxOpts } from "e2b";
