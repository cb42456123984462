// `burrow down`: kill every sandbox of an instance and remove its bridge, firewall tables and cgroups —
// the machine is left as it was before `burrow up`. Run it after stopping the server.
import { parseArgs } from "node:util";
import { envdRuntimeFiles } from "@burrow/envd";
import { DEFAULT_STATE_DIR, DEFAULT_SUBNET, LocalOrchestrator } from "@burrow/orchestrator";

export async function down(argv: string[]): Promise<void> {
  const env = process.env;
  const { values } = parseArgs({
    args: argv,
    options: {
      "state-dir": { type: "string", default: env.BURROW_STATE_DIR ?? DEFAULT_STATE_DIR },
      instance: { type: "string", default: env.BURROW_INSTANCE ?? "main" },
      subnet: { type: "string", default: env.BURROW_SUBNET ?? DEFAULT_SUBNET },
    },
  });
  const orchestrator = await LocalOrchestrator.create({
    config: { stateDir: values["state-dir"], instance: values.instance, subnet: values.subnet, pool: { template: "base", size: 0 } },
    envd: envdRuntimeFiles(),
    buildBaseTemplate: false,
  });
  const count = orchestrator.listSandboxes().length;
  await orchestrator.shutdown();
  process.stdout.write(`killed ${count} sandbox(es); network and cgroups of instance '${values.instance}' removed\n`);
}
