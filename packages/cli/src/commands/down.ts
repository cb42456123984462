// `burrow down`: kill every sandbox of an instance and remove its bridge, firewall tables and cgroups —
// the machine is left as it was before `burrow up`. Run it after stopping the server.
import { defineCommand } from "../command.js";
import { DEFAULT_INSTANCE, DEFAULT_STATE_DIR, DEFAULT_SUBNET } from "../config.js";

export const down = defineCommand({
  name: "down",
  summary: "Kill every sandbox of an instance and remove its network and cgroups (stop the server first)",
  options: {
    "state-dir": { type: "string", value: "DIR", description: `State directory of the instance (default ${DEFAULT_STATE_DIR}, env BURROW_STATE_DIR)` },
    instance: { type: "string", value: "NAME", description: `Instance name (default ${DEFAULT_INSTANCE}, env BURROW_INSTANCE)` },
    subnet: { type: "string", value: "CIDR", description: `Its sandbox subnet (default ${DEFAULT_SUBNET}, env BURROW_SUBNET)` },
  },
  async run({ values, env }) {
    const [{ resolveDownConfig }, { envdRuntimeFiles }, { LocalOrchestrator }] = await Promise.all([
      import("../up-config.js"),
      import("@burrow/envd"),
      import("@burrow/orchestrator"),
    ]);
    const config = resolveDownConfig({ stateDir: values["state-dir"], instance: values.instance, subnet: values.subnet }, env);
    const orchestrator = await LocalOrchestrator.create({
      config,
      envd: envdRuntimeFiles(),
      buildBaseTemplate: false,
    });
    const count = orchestrator.listSandboxes().length;
    await orchestrator.shutdown();
    process.stdout.write(`killed ${count} sandbox(es); network and cgroups of instance '${config.instance}' removed\n`);
  },
});
