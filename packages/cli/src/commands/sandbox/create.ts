import { defineCommand } from "../../command.js";
import { clientConnection } from "../../connection.js";
import { parseKeyValues } from "../../key-values.js";
import { parseInteger } from "../../numbers.js";
import { printJson } from "../../output.js";

/** E2B's default sandbox lifetime. */
const DEFAULT_TIMEOUT_SEC = 300;

export const sandboxCreate = defineCommand({
  name: "create",
  summary: "Start a sandbox and print its id",
  options: {
    template: { type: "string", value: "NAME", description: "Template name or id (default base)" },
    timeout: { type: "string", value: "SECONDS", description: `Lifetime; the sandbox is killed after it (default ${DEFAULT_TIMEOUT_SEC})` },
    metadata: { type: "string", multiple: true, value: "K=V", description: "Metadata to attach (repeatable)" },
    env: { type: "string", multiple: true, value: "K=V", description: "Environment variable for its processes (repeatable)" },
    "no-internet": { type: "boolean", description: "No outbound internet access" },
    json: { type: "boolean", description: "Print JSON" },
  },
  async run({ values, env }) {
    const template = values.template ?? "base";
    const timeout = values.timeout === undefined ? DEFAULT_TIMEOUT_SEC : parseInteger("--timeout", values.timeout, { min: 1 });
    const metadata = parseKeyValues(values.metadata, "metadata");
    const envs = parseKeyValues(values.env, "env");
    const connection = clientConnection(env);
    const { Sandbox } = await import("e2b");
    const sandbox = await Sandbox.create(template, {
      ...connection,
      timeoutMs: timeout * 1000,
      metadata,
      envs,
      allowInternetAccess: !values["no-internet"],
    });
    if (values.json) printJson({ sandboxId: sandbox.sandboxId, templateId: template });
    else process.stdout.write(`${sandbox.sandboxId}\n`);
  },
});
