// Binds volumes into a running sandbox: the launcher's --attach-volumes mode (native/attach.c), run through
// burrow-reaper like a launch, makes the same mounts (idmapped like the layers, nosuid, nodev, read-write, mount
// points made as sandbox root without following symlinks) that a launch with --volume makes. A create with
// volumeMounts uses it to take a pooled sandbox instead of cold-launching one.
import { runLauncherMode } from "../launcher/launcher-mode.js";
import type { ReaperPaths } from "../reaper/reaper.js";

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
  await runLauncherMode(o.reaper, attachVolumesArgs(o), {
    what: `attaching volumes to sandbox init ${o.pid}`,
    reason: "volume_attach_failed",
    succeeded: (answer) => answer.attached === o.volumes.length,
    signal,
  });
}
