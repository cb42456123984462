import type { CommandGroup } from "../../command.js";
import { templateBuild } from "./build.js";
import { templateDelete } from "./delete.js";
import { templateList } from "./list.js";

export const templateCommands: CommandGroup = {
  name: "template",
  aliases: ["tpl"],
  summary: "Build, list and delete templates",
  commands: [templateBuild, templateList, templateDelete],
};
