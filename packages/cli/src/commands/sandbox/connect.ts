import type { Sandbox } from "e2b";
import { Code } from "@burrow/protocol";
import { CliError } from "../../cli-error.js";
import type { Connection } from "../../connection.js";

/** The SDK's Sandbox.connect (which resumes a paused sandbox), with "not found" as the other commands say it. */
export async function connectSandbox(sandboxId: string, connection: Connection): Promise<Sandbox> {
  const { Sandbox, SandboxNotFoundError } = await import("e2b");
  try {
    return await Sandbox.connect(sandboxId, connection);
  } catch (error) {
    if (error instanceof SandboxNotFoundError) throw new CliError(Code.NotFound, `sandbox ${sandboxId} not found`, { cause: error });
    throw error;
  }
}
