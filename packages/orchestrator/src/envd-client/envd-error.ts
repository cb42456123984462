// Failures of calls to envd, as BurrowErrors whose message says what was being done.
import { BurrowError } from "@burrow/protocol";

/**
 * Anything a call to envd threw, as a BurrowError prefixed with what was being done. Connect errors keep the code envd
 * answered; aborts become Canceled and a connection that failed or broke Unavailable (BurrowError.from).
 */
export function envdErrorFrom(error: unknown, what: string): BurrowError {
  if (error instanceof BurrowError) return error;
  const normalised = BurrowError.from(error);
  return new BurrowError(normalised.code, `${what}: ${normalised.message}`, { cause: error });
}
