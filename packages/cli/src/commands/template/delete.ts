// burrow template delete <name or id>...
import { CliError } from "../../cli-error.js";
import type { Connection } from "../../connection.js";
import { templateRequest } from "./rest.js";

export async function templateDelete(argv: string[], connection: Connection): Promise<void> {
  if (argv.length === 0) throw new CliError("usage: burrow template delete <name or id>...", 2);
  for (const ref of argv) {
    await templateRequest(connection, "DELETE", `/templates/${encodeURIComponent(ref)}`);
    process.stdout.write(`deleted ${ref}\n`);
  }
}
