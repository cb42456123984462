// Binds volumes into a running sandbox: the launcher's --attach-volumes mode (native/attach.c), run through
// burrow-reaper like a launch, makes the same mounts (idmapped like the layers, nosuid, nodev, read-write, mount
// points made as sandbox root without following symlinks) that a launch with --volume makes. A create with
// volumeMounts uses it to take a pooled sandbox instead of cold-launching one.
import { runLauncherMode, targetArgs, type RunningSandboxTarget } from "../launcher/launcher-mode.js";

export interface AttachVolumesOptions extends RunningSandboxTarget {
  volumes: ReadonlyArray<{ hostDir: string; path: string }>;
}

export function attachVolumesArgs(o: AttachVolumesOptions): string[] {
  const args = targetArgs("attach-volumes", o);
  for (const v of o.volumes) args.push("--volume", `${v.hostDir}=${v.path}`);
  return args;
}

/** Resolves once every volume is mounted; rejects (reason volume_attach_failed) with the step that failed. */
export async function attachVolumes(o: AttachVolumesOptions, signal?: AbortSignal): Promise<void> {
  await runLauncherMode(o.reaper, attachVolumesArgs(o), {
    what: `attaching volumes to sandbox init ${o.pid}`,
    reason: "volume_attach_failed",
    succeeded: (answer) => answer.attached === o.volumes.length,
    signal,
  });
}
