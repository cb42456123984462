// `debian:<suite>` bases: bookworm is the shipped base template; any other suite is bootstrapped with
// debootstrap from the Debian mirror in this machine's apt sources (no registry is reachable), with the same
// packages and setup as the base template, and kept as a layer keyed by suite and recipe.
import { createHash } from "node:crypto";
import { copyFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Code } from "@burrow/protocol";
import { findDebianMirror, readAptSources, type AptSource } from "../../rootfs/apt-sources.js";
import { BASE_PACKAGES, BASE_SETUP_SCRIPT, BASE_SUITE } from "../../rootfs/base-recipe.js";
import { runCommand } from "../../rootfs/run-command.js";
import { shiftOwnership } from "../../rootfs/shift-ownership.js";
import { commitLayerDir, layerExists, makeTmpLayerDir } from "../builder/commit-layer.js";
import { layerIdForKey } from "../builder/build-state.js";
import { TemplateBuildError } from "../builder/template-build-error.js";

/** Docker tags of the Debian image that mean the shipped base (bookworm). */
const BOOKWORM_TAGS = new Set(["bookworm", "stable", "12", "latest", ""]);
const SUITE_BY_VERSION: Record<string, string> = { "11": "bullseye", "13": "trixie", "14": "forky" };
const KNOWN_SUITES = new Set(["bullseye", "bookworm", "trixie", "forky", "testing", "sid", "unstable", "oldstable"]);

/** `debian:<tag>` → the Debian suite, or undefined when `image` is not a Debian image we can bootstrap. */
export function debianSuiteOf(image: string): string | undefined {
  const m = /^(?:(?:docker\.io\/)?(?:library\/)?)debian(?::([A-Za-z0-9._-]+))?$/.exec(image);
  if (!m) return undefined;
  // Variants (-slim, -20240101) bootstrap the same suite.
  const tag = (m[1] ?? "").replace(/-slim$/, "").replace(/-\d{8}$/, "");
  if (BOOKWORM_TAGS.has(tag)) return BASE_SUITE;
  const suite = SUITE_BY_VERSION[tag] ?? tag;
  return KNOWN_SUITES.has(suite) ? suite : undefined;
}

export interface SuiteOptions {
  layersRoot: string;
  uidBase: number;
  uidCount: number;
  log: (message: string) => void;
  signal?: AbortSignal | undefined;
}

/** The layer id of a bootstrapped suite, building it on first use. */
export async function ensureDebianSuiteLayer(suite: string, opts: SuiteOptions): Promise<string> {
  const key = createHash("sha256")
    .update(JSON.stringify(["debootstrap-v1", suite, BASE_PACKAGES, BASE_SETUP_SCRIPT]))
    .digest("hex");
  const layerId = layerIdForKey(key);
  if (await layerExists(opts.layersRoot, layerId)) return layerId;
  const sources = await readAptSources();
  const mirror = pickMirror(sources);
  opts.log(`debootstrap ${suite} from ${mirror} (the first build of a suite takes a few minutes)`);
  const dir = await makeTmpLayerDir(opts.layersRoot, `debootstrap-${suite}`);
  const root = join(dir, "root");
  const logLine = { info: (line: string) => opts.log(line) };
  try {
    await runCommand(
      "unshare",
      ["-m", "--propagation", "private", "debootstrap", "--variant=minbase", `--include=${BASE_PACKAGES.join(",")}`, suite, root, mirror],
      { signal: opts.signal, log: logLine, label: "debootstrap" },
    );
    await writeFile(join(root, "etc/apt/sources.list"), `deb ${mirror} ${suite} main\n`);
    await copyFile("/etc/resolv.conf", join(root, "etc/resolv.conf"));
    await writeFile(join(root, "tmp/burrow-setup.sh"), BASE_SETUP_SCRIPT);
    await runCommand(
      "unshare",
      ["-m", "--propagation", "private", "sh", "-ec",
        `mount -t proc proc "$1/proc"; mount --rbind /dev "$1/dev"; exec chroot "$1" /bin/sh /tmp/burrow-setup.sh`, "sh", root],
      { signal: opts.signal, log: logLine, label: "setup", env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", LANG: "C.UTF-8", HOME: "/root" } },
    );
    await rm(join(root, "tmp/burrow-setup.sh"), { force: true });
    await shiftOwnership(root, { uidBase: opts.uidBase, uidCount: opts.uidCount, signal: opts.signal });
    await commitLayerDir(opts.layersRoot, layerId, root);
    return layerId;
  } catch (error) {
    throw new TemplateBuildError(Code.FailedPrecondition, `cannot bootstrap debian:${suite}: ${(error as Error).message}`, {
      step: "base",
      cause: error,
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function pickMirror(sources: AptSource[]): string {
  try {
    return findDebianMirror(sources, BASE_SUITE);
  } catch {
    const any = sources.find((s) => s.components.includes("main") && !/security/.test(s.uri));
    if (!any) throw new TemplateBuildError(Code.FailedPrecondition, "no Debian mirror in this machine's apt sources", { step: "base" });
    return any.uri;
  }
}
