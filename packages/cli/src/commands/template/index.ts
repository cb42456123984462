import { templateBuild } from "./build.js";
import { templateDelete } from "./delete.js";
import { templateList } from "./list.js";

/** `burrow template <verb>` handlers. */
export const TEMPLATE_COMMANDS = {
  build: templateBuild,
  list: templateList,
  ls: templateList,
  delete: templateDelete,
  rm: templateDelete,
} as const;

export const TEMPLATE_USAGE = `  burrow template build -f Dockerfile --name NAME [--context DIR] [--tag T]... [--cpu N] [--memory MB] [--skip-cache] [--ready-cmd CMD]
  burrow template build FILE.ts|FILE.mjs --name NAME     (a module exporting an e2b Template; .ts is compiled with esbuild)
      A template's ready check may take 120 s by default; set ENV BURROW_READY_TIMEOUT_MS in the template to change it.
  burrow template list [--json]
  burrow template delete NAME|ID...
`;
