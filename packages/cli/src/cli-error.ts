/** An error the CLI reports as one line and exit code 1 (2 for usage errors), without a stack trace. */
export class CliError extends Error {
  override readonly name = "CliError";
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}
