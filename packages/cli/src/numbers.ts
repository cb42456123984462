// Numeric flag and environment values, checked once with an error that names where the value came from:
// `Number("abc")` is NaN and `Number("")` is 0, so a plain conversion would quietly turn a typo into a setting.
import { usageError } from "./command.js";

export interface IntegerRange {
  min?: number;
  max?: number;
}

/**
 * Parse a decimal integer. `source` names the flag or variable in the error, e.g. "--pool-size" or
 * "BURROW_POOL_SIZE". Errors are usage errors (exit code 2).
 */
export function parseInteger(source: string, raw: string, { min = 0, max = Number.MAX_SAFE_INTEGER }: IntegerRange = {}): number {
  const value = /^-?\d+$/.test(raw.trim()) ? Number(raw.trim()) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min) {
    const kind = min === 0 ? "a non-negative integer" : min === 1 ? "a positive integer" : `an integer ≥ ${min}`;
    throw usageError(`${source} must be ${kind}, got '${raw}'`);
  }
  if (value > max) throw usageError(`${source} must be at most ${max}, got '${raw}'`);
  return value;
}

/** `parseInteger` for an optional flag: undefined stays undefined. */
export function optionalInteger(source: string, raw: string | undefined, range?: IntegerRange): number | undefined {
  return raw === undefined ? undefined : parseInteger(source, raw, range);
}
