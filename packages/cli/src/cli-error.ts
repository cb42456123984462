import { BurrowError, type BurrowErrorInit, type Code } from "@burrow/protocol";

/** An error the CLI reports as one line and exit code 1 (2 for usage errors), without a stack trace. */
export class CliError extends BurrowError {
  override name = "CliError";
  readonly exitCode: number;

  constructor(code: Code, message: string, init: BurrowErrorInit & { exitCode?: number } = {}) {
    super(code, message, init);
    this.exitCode = init.exitCode ?? 1;
  }
}
