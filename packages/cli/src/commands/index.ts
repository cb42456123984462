// The command tree. Every module here is cheap to import: handlers load the SDK, the orchestrator or the server
// when they run, so `burrow sandbox list` never loads the server.
import type { Entry } from "../help.js";
import { ca } from "./ca.js";
import { down } from "./down.js";
import { keyCommands } from "./key/index.js";
import { mcp } from "./mcp.js";
import { modelCommands } from "./models/index.js";
import { nodeCommands } from "./node/index.js";
import { queueCommands } from "./queue/index.js";
import { sandboxCommands } from "./sandbox/index.js";
import { teamCommands } from "./team/index.js";
import { templateCommands } from "./template/index.js";
import { up } from "./up.js";

export const COMMANDS: readonly Entry[] = [up, down, ca, sandboxCommands, templateCommands, teamCommands, keyCommands, modelCommands, nodeCommands, queueCommands, mcp];
