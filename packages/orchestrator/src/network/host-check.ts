// Before the bridge takes the sandbox subnet, make sure the host does not already use any of it: an
// overlap would either shadow a real network or send sandbox traffic somewhere unexpected.
import { exec } from "./exec.js";
import { formatCidr, type Ipv4Prefix, overlaps, parseCidr } from "./ipv4.js";
import { NetworkError } from "./network-error.js";

interface IpRoute {
  dst?: string;
  dev?: string;
  table?: string;
  type?: string;
}

interface IpAddrLink {
  ifname: string;
  mtu?: number;
  addr_info?: { family?: string; local?: string; prefixlen?: number }[];
}

export interface HostView {
  routes: IpRoute[];
  links: IpAddrLink[];
}

export async function readHostView(signal?: AbortSignal): Promise<HostView> {
  const [routes, links] = await Promise.all([
    exec("ip", ["-j", "-4", "route", "show", "table", "all"], { signal }),
    exec("ip", ["-j", "-4", "addr", "show"], { signal }),
  ]);
  return { routes: JSON.parse(routes) as IpRoute[], links: JSON.parse(links) as IpAddrLink[] };
}

/**
 * Everything on the host that overlaps `subnet`, as human-readable descriptions. The instance's own
 * bridge is skipped (setup is idempotent), and so are routes of length 0 and 1: the default route and a
 * VPN's split default (0.0.0.0/1 + 128.0.0.0/1) lose to the bridge's more specific route anyway.
 */
export function findConflicts(view: HostView, subnet: Ipv4Prefix, ownBridge: string): string[] {
  const conflicts: string[] = [];
  for (const route of view.routes) {
    if (route.dev === ownBridge || route.dst === undefined || route.dst === "default") continue;
    const dst = parseCidr(route.dst.includes("/") ? route.dst : `${route.dst}/32`);
    if (dst.length <= 1 || !overlaps(dst, subnet)) continue;
    const where = route.dev ? ` dev ${route.dev}` : "";
    conflicts.push(`route ${route.type ? `${route.type} ` : ""}${formatCidr(dst)}${where} (table ${route.table ?? "main"})`);
  }
  for (const link of view.links) {
    if (link.ifname === ownBridge) continue;
    for (const a of link.addr_info ?? []) {
      if (a.family !== "inet" || a.local === undefined) continue;
      const addr = parseCidr(`${a.local}/${a.prefixlen ?? 32}`);
      if (overlaps(addr, subnet)) conflicts.push(`address ${a.local}/${a.prefixlen ?? 32} on ${link.ifname}`);
    }
  }
  return conflicts;
}

export function assertNoConflicts(view: HostView, subnet: Ipv4Prefix, ownBridge: string): void {
  const conflicts = findConflicts(view, subnet, ownBridge);
  if (conflicts.length > 0) {
    throw new NetworkError(
      "subnet_conflict",
      `sandbox subnet ${formatCidr(subnet)} overlaps ${conflicts.join(", ")}; choose another subnet`,
    );
  }
}

/** MTU of the interface that carries the default route (the sandboxes' way out), if there is one. */
export function uplinkMtu(view: HostView): number | undefined {
  const dev = view.routes.find((r) => r.dst === "default" && (r.table === undefined || r.table === "main"))?.dev;
  return view.links.find((l) => l.ifname === dev)?.mtu;
}
