// The execution server's settings, resolved once from the environment (template ENV or the start command's).
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { CODE_INTERPRETER_PORT, ENVD_PORT } from "@burrow/protocol/constants";
import { normalizeLanguage } from "./language.js";

export { CODE_INTERPRETER_PORT };

export interface CodeInterpreterConfig {
  /** @default "0.0.0.0" (BURROW_INTERPRETER_HOST) */
  readonly host: string;
  /** @default 49999 (BURROW_INTERPRETER_PORT) */
  readonly port: number;
  /** envd, for the sandbox's variables and the token check; undefined disables both. @default http://127.0.0.1:49983 (BURROW_INTERPRETER_ENVD_URL, "" = none) */
  readonly envdUrl: string | undefined;
  /** Working directory of contexts that name none. @default /home/user, else the home directory (BURROW_INTERPRETER_CWD) */
  readonly defaultCwd: string;
  /** Contexts created at start. @default python,javascript (BURROW_INTERPRETER_DEFAULT_CONTEXTS, "" = none) */
  readonly defaultContexts: readonly string[];
  /** Quiet time after which a keepalive line is streamed. @default 5000 */
  readonly keepaliveMs: number;
  /** stdout+stderr characters streamed per run before truncation. @default 16 MiB (BURROW_INTERPRETER_MAX_OUTPUT_BYTES) */
  readonly maxOutputChars: number;
  /** Result bytes streamed per run. @default 64 MiB */
  readonly maxResultBytes: number;
  /** Time limit of runs that name none, in ms; 0 = none. @default 0 (BURROW_INTERPRETER_TIMEOUT_MS) */
  readonly defaultTimeoutMs: number;
  /** How long an interrupted run may take to stop before its kernel is restarted. @default 3000 */
  readonly interruptGraceMs: number;
  /** @default 64 (BURROW_INTERPRETER_MAX_CONTEXTS) */
  readonly maxContexts: number;
}

function intFrom(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") return fallback;
  const value = Number(raw.trim());
  if (!Number.isSafeInteger(value) || value < min) throw new Error(`${name} must be an integer ≥ ${min}, got '${raw}'`);
  return value;
}

export function resolveConfig(overrides: Partial<CodeInterpreterConfig> = {}, env: NodeJS.ProcessEnv = process.env): CodeInterpreterConfig {
  const envdUrl = env.BURROW_INTERPRETER_ENVD_URL ?? `http://127.0.0.1:${ENVD_PORT}`;
  const contexts = env.BURROW_INTERPRETER_DEFAULT_CONTEXTS ?? "python,javascript";
  return Object.freeze({
    host: env.BURROW_INTERPRETER_HOST || "0.0.0.0",
    port: intFrom(env, "BURROW_INTERPRETER_PORT", CODE_INTERPRETER_PORT),
    envdUrl: envdUrl === "" ? undefined : envdUrl,
    defaultCwd: env.BURROW_INTERPRETER_CWD || (existsSync("/home/user") ? "/home/user" : homedir()),
    defaultContexts: contexts.split(",").map((l) => l.trim()).filter(Boolean).map(normalizeLanguage),
    keepaliveMs: 5000,
    maxOutputChars: intFrom(env, "BURROW_INTERPRETER_MAX_OUTPUT_BYTES", 16 * 1024 * 1024, 1),
    maxResultBytes: 64 * 1024 * 1024,
    defaultTimeoutMs: intFrom(env, "BURROW_INTERPRETER_TIMEOUT_MS", 0),
    interruptGraceMs: 3000,
    maxContexts: intFrom(env, "BURROW_INTERPRETER_MAX_CONTEXTS", 64, 1),
    ...overrides,
  });
}
