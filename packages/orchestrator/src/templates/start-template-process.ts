// A template's start command runs in every sandbox created from it: started in the background through envd,
// then the ready command is polled until it exits 0. Creation fails with the start command's output when the
// command dies or readiness does not come in time.
import { runEnvdCommand, startEnvdCommand, type EnvdTarget } from "../envd-rpc/index.js";
import { OrchestratorError } from "../errors.js";
import type { TemplateManifest } from "./template-store.js";

export interface StartTemplateOptions {
  /** How long the ready command may take to succeed. @default 120000 */
  readyTimeoutMs?: number;
  /** Pause between ready checks. @default 200 */
  pollIntervalMs?: number;
  signal?: AbortSignal | undefined;
}

/** envd tag of the start command's process, so it can be found with `commands.list()`. */
export const START_COMMAND_TAG = "burrow-start-cmd";

/**
 * Start `manifest.runtime.startCmd` (if any) in the sandbox and wait for `readyCmd`. Without a ready command the
 * start command only has to be running. Call right after the sandbox's envd was /init-ed.
 */
export async function startTemplateProcess(
  sandbox: EnvdTarget,
  manifest: TemplateManifest,
  opts: StartTemplateOptions = {},
): Promise<void> {
  const runtime = manifest.runtime;
  if (!runtime?.startCmd && !runtime?.readyCmd) return;
  const { signal } = opts;
  const user = runtime.user;
  const base = { user, cwd: runtime.workdir, envs: runtime.env };
  const started = runtime.startCmd
    ? await startEnvdCommand(sandbox, { ...base, command: runtime.startCmd, tag: START_COMMAND_TAG, signal }).catch(
        (error: unknown) => {
          throw new OrchestratorError("failed_precondition", `start command could not be started: ${(error as Error).message}`, {
            cause: error,
          });
        },
      )
    : undefined;
  const deadline = Date.now() + (opts.readyTimeoutMs ?? 120_000);
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
      const result = await runEnvdCommand(sandbox, { ...base, command: runtime.readyCmd, timeoutMs: 30_000, signal }, (_s, chunk) => {
        lastReady = (lastReady + Buffer.from(chunk).toString("utf8")).slice(-2000);
      });
      if (result.exitCode === 0) return;
      if (ended !== undefined) {
        const how = ended instanceof Error ? ended.message : `exited with code ${ended.exitCode}`;
        throw new OrchestratorError(
          "failed_precondition",
          `start command '${runtime.startCmd}' ${how} before the ready check passed; its output:\n${started?.output() ?? ""}`,
        );
      }
      if (Date.now() > deadline) {
        throw new OrchestratorError(
          "deadline_exceeded",
          `ready check '${runtime.readyCmd}' did not pass within ${opts.readyTimeoutMs ?? 120_000} ms` +
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
