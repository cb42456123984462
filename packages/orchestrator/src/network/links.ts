// Which network interfaces exist, as this process's network namespace has them. Not /sys/class/net: sysfs lists the
// links of the namespace that mounted it, which is not this process's when the server joined another namespace
// without remounting /sys (nsenter --net, systemd's NetworkNamespacePath=); `ip netns exec` remounts /sys but hides
// the cgroup hierarchy mounted below it. /proc/sys/net is resolved in the reading process's namespace, and every link
// of Burrow's (bridge, veths: MTU far above IPv4's minimum of 68) has an entry under ipv4/conf there.
import { existsSync } from "node:fs";
import { readdir } from "node:fs/promises";

const CONF = "/proc/sys/net/ipv4/conf";
/** Entries of ipv4/conf that are settings, not links. */
const NOT_LINKS = new Set(["all", "default"]);

/** Whether a link of this name exists in this process's network namespace. */
export function linkExists(name: string): boolean {
  // A name with a slash or a dot-segment would point elsewhere in /proc; no link is so named.
  return name !== "" && !name.includes("/") && name !== "." && name !== ".." && !NOT_LINKS.has(name) && existsSync(`${CONF}/${name}`);
}

/** The names of the links in this process's network namespace. */
export async function linkNames(): Promise<string[]> {
  return (await readdir(CONF)).filter((name) => !NOT_LINKS.has(name));
}
