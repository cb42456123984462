import { parseArgs } from "node:util";
import { Sandbox } from "e2b";
import type { Connection } from "../../connection.js";
import { parseKeyValues } from "../../key-values.js";
import { printJson } from "../../output.js";

export async function sandboxCreate(argv: string[], connection: Connection): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      template: { type: "string", default: "base" },
      timeout: { type: "string", default: "300" },
      metadata: { type: "string", multiple: true },
      env: { type: "string", multiple: true },
      "no-internet": { type: "boolean", default: false },
      json: { type: "boolean", default: false },
    },
  });
  const sandbox = await Sandbox.create(values.template, {
    ...connection,
    timeoutMs: Number(values.timeout) * 1000,
    metadata: parseKeyValues(values.metadata, "metadata"),
    envs: parseKeyValues(values.env, "env"),
    allowInternetAccess: !values["no-internet"],
  });
  if (values.json) printJson({ sandboxId: sandbox.sandboxId, templateId: values.template });
  else process.stdout.write(`${sandbox.sandboxId}\n`);
}
