// RUN: the command runs inside a fresh build sandbox (the same isolation as user sandboxes, with network)
// stacked on the layers so far; when it succeeds, the sandbox's writable upper directory becomes the step's
// layer. The sandbox is always destroyed, and the upper is moved out first so destroy does not delete it.
import { randomBytes } from "node:crypto";
import { moveDir } from "../../storage/move-dir.js";
import { join } from "node:path";
import { Code } from "@burrow/protocol";
import { envdAt, initEnvd, runProcess, type EnvdTarget } from "../../envd-client/index.js";
import type { HostedSandbox, SandboxHost } from "../../sandbox-host.js";
import type { SandboxLimits } from "../../types.js";
import type { TemplateManifest } from "../template-store.js";
import { LineSplitter } from "./build-log.js";
import { TemplateBuildError } from "./template-build-error.js";

export interface RunStepInput {
  host: SandboxHost;
  /** Build id, for the synthetic manifest the sandbox is launched from. */
  buildId: string;
  /** Layers to run on, top first. */
  layers: string[];
  limits: SandboxLimits;
  command: string;
  user: string;
  workdir?: string | undefined;
  env: Record<string, string>;
  step: string;
  /** Receives each output line. */
  onLine: (stream: "stdout" | "stderr", line: string) => void;
  /** Where the upper directory is moved on success (must not exist; same filesystem as the state dir). */
  resultDir: string;
  signal?: AbortSignal | undefined;
}

/** Launch a build sandbox on `layers` and /init its envd; the caller destroys it. */
export async function launchBuildSandbox(
  host: SandboxHost,
  buildId: string,
  layers: string[],
  limits: SandboxLimits,
  signal?: AbortSignal,
): Promise<{ sandbox: HostedSandbox; target: EnvdTarget }> {
  const manifest: TemplateManifest = {
    // Template ids are [a-z0-9] (E2B's alphabet); a build id is a UUID.
    templateId: `build${buildId.replaceAll("-", "")}`,
    aliases: [],
    layers,
    defaults: limits,
    createdAt: new Date().toISOString(),
  };
  // pooled: a build sandbox is never a user's; after a restart the orchestrator reaps pooled sandboxes.
  const sandbox = await host.launch(manifest, limits, { allowInternetAccess: true, pooled: true, signal });
  const accessToken = randomBytes(24).toString("hex");
  try {
    await initEnvd(envdAt(sandbox.record.ip, sandbox.record.initToken), { envVars: {}, accessToken, defaultUser: "root" }, signal);
  } catch (error) {
    await host.destroy(sandbox).catch(() => undefined);
    throw error;
  }
  return { sandbox, target: envdAt(sandbox.record.ip, accessToken) };
}

export async function runRunStep(input: RunStepInput): Promise<void> {
  const { step, signal } = input;
  const { sandbox, target } = await launchBuildSandbox(input.host, input.buildId, input.layers, input.limits, signal);
  let destroyed = false;
  try {
    if (input.workdir) {
      // WORKDIR is created on first use, owned by the user that will work in it (as Docker and E2B do).
      const made = await runProcess(target, {
        cmd: "/bin/sh",
        args: ["-c", '[ -d "$BURROW_WORKDIR" ] || { mkdir -p "$BURROW_WORKDIR" && chown "$BURROW_USER" "$BURROW_WORKDIR"; }'],
        user: "root",
        envs: { BURROW_WORKDIR: input.workdir, BURROW_USER: input.user },
        signal,
      });
      if (made.exitCode !== 0) {
        throw new TemplateBuildError(Code.FailedPrecondition, `step ${step}: cannot create workdir ${input.workdir}`, { step });
      }
    }
    const stdout = new LineSplitter((line) => input.onLine("stdout", line));
    const stderr = new LineSplitter((line) => input.onLine("stderr", line));
    const result = await runProcess(
      target,
      { cmd: "/bin/sh", args: ["-c", input.command], user: input.user, cwd: input.workdir, envs: input.env, signal },
      (stream, chunk) => (stream === "stderr" ? stderr : stdout).push(chunk),
    );
    stdout.flush();
    stderr.flush();
    if (result.exitCode !== 0) {
      throw new TemplateBuildError(
        Code.FailedPrecondition,
        `step ${step}: command failed with exit code ${result.exitCode}: ${input.command}`,
        { step },
      );
    }
    // Every process must be gone before the upper is taken: nothing may write to it once it is a layer.
    await sandbox.cgroup.killAll(AbortSignal.timeout(10_000));
    await moveDir(join(sandbox.dir, "upper"), input.resultDir, signal);
    await input.host.destroy(sandbox);
    destroyed = true;
  } catch (error) {
    if (error instanceof TemplateBuildError) throw error;
    if (signal?.aborted) throw new TemplateBuildError(Code.Canceled, "build canceled", { step, cause: error });
    throw new TemplateBuildError(Code.Internal, `step ${step}: ${(error as Error).message}`, { step, cause: error });
  } finally {
    if (!destroyed) await input.host.destroy(sandbox).catch(() => undefined);
  }
}
