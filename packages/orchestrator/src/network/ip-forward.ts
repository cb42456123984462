// Sandboxes with internet access need the host to route. ip_forward is host-wide while several Burrow instances
// (a server, a test run, a benchmark) may run at once, so the instances that need it are registered in one
// host-wide file under /run (cleared at boot, like ip_forward itself): the first one records the value it found,
// the last one to leave puts it back. An instance that crashed stays registered until its next teardown.
// ip_forward is in fact per network namespace (/proc/sys/net is the reading process's), so an instance running in
// a namespace of its own (a node of a cluster test) keeps a registry of that namespace: sharing the host's would let
// the last to leave write one namespace's original value into another's.
import { readlinkSync } from "node:fs";
import { mkdir, readFile, rename, rm, rmdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";

const IP_FORWARD = "/proc/sys/net/ipv4/ip_forward";
const REGISTRY_DIR = "/run/burrow";
/** The kernel's fixed inode number of the initial network namespace (PROC_NET_INIT_INO, 0xEFFFFFF9). */
const INIT_NET = "net:[4026531833]";

const { REGISTRY, LOCK } = registryPaths();
/** A lock older than this was left by a process that died holding it. */
const STALE_LOCK_MS = 10_000;

interface ForwardRegistry {
  /** ip_forward before the first instance turned it on. */
  original: "0" | "1";
  /** Instances that need forwarding now. */
  holders: string[];
}

/**
 * ip-forward.json in the initial network namespace (the name instances have always used), ip-forward-net<inode>.json
 * in another. Judged by the namespace's own inode number: /proc/1/ns/net may not be readable.
 */
function registryPaths(): { REGISTRY: string; LOCK: string } {
  let base = "ip-forward";
  try {
    const own = readlinkSync("/proc/self/ns/net");
    if (own !== INIT_NET) base += `-net${/\[(\d+)\]/.exec(own)?.[1] ?? "unknown"}`;
  } catch {
    // No namespaces in /proc: the host-wide registry, as before.
  }
  return { REGISTRY: join(REGISTRY_DIR, `${base}.json`), LOCK: join(REGISTRY_DIR, `${base}.lock`) };
}

export async function readIpForward(): Promise<string> {
  return (await readFile(IP_FORWARD, "utf8")).trim();
}

async function withLock<T>(fn: () => Promise<T>): Promise<T> {
  await mkdir(REGISTRY_DIR, { recursive: true });
  for (let attempt = 0; ; attempt++) {
    try {
      await mkdir(LOCK);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const age = Date.now() - (await stat(LOCK).then((s) => s.mtimeMs, () => Date.now()));
      if (age > STALE_LOCK_MS) await rmdir(LOCK).catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, Math.min(50, 2 + attempt)));
    }
  }
  try {
    return await fn();
  } finally {
    await rmdir(LOCK).catch(() => undefined);
  }
}

async function readRegistry(): Promise<ForwardRegistry | undefined> {
  try {
    const parsed = JSON.parse(await readFile(REGISTRY, "utf8")) as Partial<ForwardRegistry>;
    if ((parsed.original === "0" || parsed.original === "1") && Array.isArray(parsed.holders)) {
      return { original: parsed.original, holders: parsed.holders.filter((h) => typeof h === "string") };
    }
  } catch {
    // Missing or unreadable: no instance holds forwarding.
  }
  return undefined;
}

async function writeRegistry(registry: ForwardRegistry): Promise<void> {
  await writeFile(`${REGISTRY}.tmp`, `${JSON.stringify(registry)}\n`);
  await rename(`${REGISTRY}.tmp`, REGISTRY);
}

/** Register `holder` and turn forwarding on. */
export async function enableIpForward(holder: string): Promise<void> {
  await withLock(async () => {
    const current = await readIpForward();
    const registry = (await readRegistry()) ?? { original: current === "1" ? "1" : "0", holders: [] };
    if (!registry.holders.includes(holder)) registry.holders.push(holder);
    await writeRegistry(registry);
    if (current !== "1") await writeFile(IP_FORWARD, "1\n");
  });
}

/** Unregister `holder`; the last holder puts ip_forward back to what the first one found. */
export async function restoreIpForward(holder: string): Promise<void> {
  await withLock(async () => {
    const registry = await readRegistry();
    if (!registry) return;
    registry.holders = registry.holders.filter((h) => h !== holder);
    if (registry.holders.length > 0) {
      await writeRegistry(registry);
      return;
    }
    if ((await readIpForward()) !== registry.original) await writeFile(IP_FORWARD, `${registry.original}\n`);
    await rm(REGISTRY, { force: true });
  });
}
