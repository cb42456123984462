import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type * as NodePty from "node-pty";

/** Name of envd's own native package (addon + envd-exec), laid out beside node-pty in the runtime's node_modules. */
export const NATIVE_PACKAGE = "burrow-envd-native";

export interface InotifyEvent {
  wd: number;
  mask: number;
  cookie: number;
  name: string;
}

export interface EnvdNativeAddon {
  listXattrs(path: string): string[];
  getXattr(path: string, name: string): Buffer | null;
  setXattr(path: string, name: string, value: Buffer): void;
  removeXattr(path: string, name: string): void;
  inotifyOpen(onEvents: (events: InotifyEvent[]) => void): object;
  inotifyAddWatch(handle: object, path: string, mask: number): number;
  inotifyRmWatch(handle: object, wd: number): void;
  inotifyClose(handle: object): void;
  /** Zeroes NAME's value in the initial environment block (/proc/self/environ); returns how many were found. */
  scrubInitialEnv(name: string): number;
}

// Resolution starts at this module's file, so in the bundle it finds <dir of envd.mjs>/node_modules/<name> first.
const require = createRequire(import.meta.url);

let addon: EnvdNativeAddon | undefined;
let pty: typeof NodePty | undefined;
let execHelper: string | null | undefined;

/** The xattr/inotify addon, loaded on first use. */
export function nativeAddon(): EnvdNativeAddon {
  addon ??= require(`${NATIVE_PACKAGE}/envd_native.node`) as EnvdNativeAddon;
  return addon;
}

/** node-pty, loaded only when the first PTY is requested: most sandboxes never open one. */
export function nodePty(): typeof NodePty {
  pty ??= require("node-pty") as typeof NodePty;
  return pty;
}

/** Path of the envd-exec helper, or null when it is not installed (then Node's own uid/gid switch is used). */
export function execHelperPath(): string | null {
  if (execHelper === undefined) {
    try {
      execHelper = join(dirname(require.resolve(`${NATIVE_PACKAGE}/package.json`)), "envd-exec");
    } catch {
      execHelper = null;
    }
  }
  return execHelper;
}
