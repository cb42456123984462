import type { CommandGroup } from "../../command.js";
import { sandboxBranch, sandboxCheckpoint, sandboxRollback, sandboxTree } from "./checkpoints.js";
import { sandboxCreate } from "./create.js";
import { sandboxExec } from "./exec.js";
import { sandboxKill } from "./kill.js";
import { sandboxList } from "./list.js";
import { sandboxLogs } from "./logs.js";
import { sandboxPause, sandboxResume } from "./pause.js";
import { sandboxShell } from "./shell.js";

export const sandboxCommands: CommandGroup = {
  name: "sandbox",
  aliases: ["sbx"],
  summary: "Create, list, run commands in, pause, checkpoint and kill sandboxes",
  commands: [
    sandboxCreate,
    sandboxList,
    sandboxKill,
    sandboxLogs,
    sandboxExec,
    sandboxShell,
    sandboxPause,
    sandboxResume,
    sandboxCheckpoint,
    sandboxTree,
    sandboxRollback,
    sandboxBranch,
  ],
};
