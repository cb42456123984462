// A template's start command runs in every sandbox created from it: started in the background through envd,
// then the ready command is polled until it exits 0. Creation fails with the start command's output when the
// command dies or readiness does not come in time. A template sets its own ready timeout with the ENV variable
// BURROW_READY_TIMEOUT_MS (e.g. `setEnvs({ BURROW_READY_TIMEOUT_MS: "5000" })` or `ENV BURROW_READY_TIMEOUT_MS=5000`).
import { BurrowError, Code } from "@burrow/protocol";
import { runProcess, startBackgroundProcess, type EnvdTarget } from "../envd-client/index.js";
import type { TemplateManifest } from "./template-store.js";

export interface StartTemplateOptions {
  /** How long the ready command may take to succeed, unless the template sets BURROW_READY_TIMEOUT_MS. @default 120000 */
  readyTimeoutMs?: number;
  /** Pause between ready checks. @default 200 */
  pollIntervalMs?: number;
  signal?: AbortSignal | undefined;
}

/** envd tag of the start command's process, so it can be found with `commands.list()`. */
export const START_COMMAND_TAG = "burrow-start-cmd";

/** Template ENV variable that sets how long (ms) the ready check may take in sandboxes of that template. */
export const READY_TIMEOUT_ENV = "BURROW_READY_TIMEOUT_MS";

const DEFAULT_READY_TIMEOUT_MS = 120_000;
/** Longest a single ready-command run may take. */
const READY_CMD_RUN_LIMIT_MS = 30_000;

/** The ready timeout a template's ENV asks for; undefined when unset. Throws on a value that is not a positive integer. */
export function templateReadyTimeoutMs(env: Record<string, string> | undefined): number | undefined {
  const raw = env?.[READY_TIMEOUT_ENV];
  if (raw === undefined || raw.trim() === "") return undefined;
  const value = Number(raw.trim());
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new BurrowError(Code.InvalidArgument, `${READY_TIMEOUT_ENV} must be a positive number of milliseconds, got '${raw}'`);
  }
  return value;
}

/**
 * Start `manifest.runtime.startCmd` (if any) in the sandbox and wait for `readyCmd`. Without a ready command the
 * start command only has to be running. Call right after the sandbox's envd was /init-ed.
 */
export async function startTemplateProcess(
  sandbox: EnvdTarget,
  manifest: Pick<TemplateManifest, "runtime">,
  opts: StartTemplateOptions = {},
): Promise<void> {
  const runtime = manifest.runtime;
  if (!runtime?.startCmd && !runtime?.readyCmd) return;
  const { signal } = opts;
  const timeoutMs = templateReadyTimeoutMs(runtime.env) ?? opts.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS;
  const user = runtime.user;
  const base = { cmd: "/bin/sh", user, cwd: runtime.workdir, envs: runtime.env };
  const started = runtime.startCmd
    ? await startBackgroundProcess(sandbox, { ...base, args: ["-c", runtime.startCmd], tag: START_COMMAND_TAG, signal }).catch(
        (error: unknown) => {
          throw new BurrowError(Code.FailedPrecondition, `start command could not be started: ${(error as Error).message}`, {
            cause: error,
          });
        },
      )
    : undefined;
  const deadline = Date.now() + timeoutMs;
  const interval = opts.pollIntervalMs ?? 200;
  let lastReady = "";
  let ended: Awaited<NonNullable<typeof started>["ended"]> | undefined;
  void started?.ended.then((result) => {
    ended = result;
  });
  try {
    for (;;) {
      signal?.throwIfAborted();
      if (!runtime.readyCmd) return;
      // One run of the ready command never outlasts the deadline (by more than a second, so it can report).
      const runLimit = Math.min(READY_CMD_RUN_LIMIT_MS, Math.max(1000, deadline - Date.now()));
      const result = await runProcess(sandbox, { ...base, args: ["-c", runtime.readyCmd], timeoutMs: runLimit, signal }, (_s, chunk) => {
        lastReady = (lastReady + Buffer.from(chunk).toString("utf8")).slice(-2000);
      }).catch((error: unknown) => {
        // A ready command that hangs counts as "not ready yet"; anything else (envd gone) is a real failure.
        if (signal?.aborted || !(error instanceof BurrowError) || error.code !== Code.DeadlineExceeded) throw error;
        lastReady = `${lastReady}(the ready command ran for ${runLimit} ms without finishing)`.slice(-2000);
        return { exitCode: -1 };
      });
      if (result.exitCode === 0) return;
      if (ended !== undefined) {
        const how = ended instanceof Error ? ended.message : `exited with code ${ended.exitCode}`;
        throw new BurrowError(
          Code.FailedPrecondition,
          `start command '${runtime.startCmd}' ${how} before the ready check passed; its output:\n${started?.output() ?? ""}`,
        );
      }
      if (Date.now() > deadline) {
        throw new BurrowError(
          Code.DeadlineExceeded,
          `ready check '${runtime.readyCmd}' did not pass within ${timeoutMs} ms` +
            `${lastReady ? ` (last output: ${lastReady.trim()})` : ""}; start command output:\n${started?.output() ?? ""}`,
        );
      }
      lastReady = "";
      await new Promise((resolve) => setTimeout(resolve, interval));
    }
  } finally {
    // Stop following the output; the start command keeps running in the sandbox.
    started?.detach();
  }
}
