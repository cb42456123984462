// The limits a create asks for: what it leaves out comes from the template's defaults, and each must be in range.
import { BurrowError, Code } from "@burrow/protocol";
import type { SandboxLimits } from "./types.js";

const LIMIT_RANGES: Record<keyof SandboxLimits, [number, number]> = {
  cpuCount: [0.1, 64],
  memoryMB: [32, 262_144],
  diskMB: [64, 1_048_576],
  pids: [16, 1_000_000],
};

/** `requested` over `defaults`; invalid_limits (InvalidArgument) when one is out of range. */
export function sandboxLimits(defaults: SandboxLimits, requested: Partial<SandboxLimits>): SandboxLimits {
  const limits: SandboxLimits = { ...defaults, ...definedOnly(requested) };
  for (const [key, [min, max]] of Object.entries(LIMIT_RANGES) as [keyof SandboxLimits, [number, number]][]) {
    const value = limits[key];
    if (typeof value !== "number" || !Number.isFinite(value) || value < min || value > max) {
      throw new BurrowError(Code.InvalidArgument, `${key} must be a number between ${min} and ${max}, got ${String(value)}`, {
        reason: "invalid_limits",
      });
    }
  }
  return limits;
}

export function sameLimits(a: SandboxLimits, b: SandboxLimits): boolean {
  return a.cpuCount === b.cpuCount && a.memoryMB === b.memoryMB && a.diskMB === b.diskMB && a.pids === b.pids;
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
