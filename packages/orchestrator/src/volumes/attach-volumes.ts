// Binds volumes into a running sandbox: the launcher's --attach-volumes mode (native/attach.c), run through
// burrow-reaper like a launch, makes the same mounts (idmapped like the layers, nosuid, nodev, read-write, mount
// points made as sandbox root without following symlinks) that a launch with --volume makes. A create with
// volumeMounts uses it to take a pooled sandbox instead of cold-launching one.
import { BurrowError, Code } from "@burrow/protocol";
import { runThroughReaper, type ReaperPaths } from "../reaper/reaper.js";

export interface AttachVolumesOptions {
  reaper: ReaperPaths;
  /** Host pid of the sandbox init, whose namespaces and root are entered. */
  pid: number;
  /** Field 22 of the init's /proc/<pid>/stat at launch (its record's pidStartTime): a reused pid is refused. */
  pidStartTime: string;
  /** Canonical host uid of sandbox root on disk (--uid-base) and the size of the range. */
  uidBase: number;
  uidCount: number;
  /** Host uid of root in this sandbox (its record's hostUidBase): its own range, or uidBase. */
  hostUidBase: number;
  volumes: ReadonlyArray<{ hostDir: string; path: string }>;
}

export function attachVolumesArgs(o: AttachVolumesOptions): string[] {
  const args = ["--attach-volumes", String(o.pid), "--start-time", o.pidStartTime, "--uid-base", String(o.uidBase), "--uid-count", String(o.uidCount)];
  args.push("--host-base", String(o.hostUidBase));
  for (const v of o.volumes) args.push("--volume", `${v.hostDir}=${v.path}`);
  return args;
}

/** Resolves once every volume is mounted; rejects (reason volume_attach_failed) with the step that failed. */
export async function attachVolumes(o: AttachVolumesOptions, signal?: AbortSignal): Promise<void> {
  const output = await runThroughReaper(o.reaper, attachVolumesArgs(o), signal);
  if (signal?.aborted) throw new BurrowError(Code.Canceled, "volume attach canceled", { reason: "launch_canceled", cause: signal.reason });
  const line = output.trim().split("\n").pop() ?? "";
  let answer: { attached?: unknown; error?: unknown; step?: unknown } | undefined;
  try {
    answer = JSON.parse(line) as typeof answer;
  } catch {
    answer = undefined;
  }
  if (answer && answer.attached === o.volumes.length) return;
  const why = answer && typeof answer.error === "string" ? `${String(answer.step)}: ${answer.error}` : JSON.stringify(output);
  throw new BurrowError(Code.Internal, `volumes could not be attached to sandbox init ${o.pid}: ${why}`, { reason: "volume_attach_failed" });
}
