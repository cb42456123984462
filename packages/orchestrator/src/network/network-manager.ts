// One bridge per instance, one veth per sandbox, nftables for isolation (see ruleset.ts for the policy).
// A sandbox's address is reserved and its firewall elements installed here (reserve); the veth itself is plumbed
// by the launcher as it starts the sandbox, or by burrow-netattach for a namespace made elsewhere (attach).
import { writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { BatchQueue } from "../batch-queue.js";
import { launcherBinaryPath } from "../launcher/launcher-binary.js";
import type { NetworkManager, NetworkReservation, SandboxNetwork } from "../types.js";
import type { CommandRunner } from "../reaper/run-command.js";
import { exec, spawnCommand, type ExecOptions } from "./exec.js";
import { assertNoConflicts, readHostView, uplinkMtu } from "./host-check.js";
import { enableIpForward, restoreIpForward } from "./ip-forward.js";
import { formatIpv4, type Ipv4Prefix, parseCidr } from "./ipv4.js";
import { GATEWAY_OFFSET, LeasePool } from "./leases.js";
import { linkExists, linkNames } from "./links.js";
import { leaseOfVeth, type NetworkNames, networkNames, vethName } from "./names.js";
import { NetworkError } from "./network-error.js";
import { netPlumbingArgs, type NetPlumbing } from "./net-plumbing.js";
import { type EgressRules, normalizeEgressRules } from "./egress-rules.js";
import type { EgressLimitRates } from "./egress-limits.js";
import { dropEgressChainLines, dropInspectChainLines, EGRESS_MAP, egressScript, INSPECT_MAP, ipOfEgressChain, ipOfInspectChain, PROXIED_SET, TUNNELED_SET } from "./egress-ruleset.js";
import { directAddLines, directDropLines, directEndsScript } from "./direct-ruleset.js";
import { installQueueRule, removeQueueRules } from "./direct-queue-rule.js";
import { bindScript, type HostServicePorts, type PortBinding, redirectScript, setupScript, teardownScript, unbindScript } from "./ruleset.js";

/** Anything with `info` and `warn` taking a message (console, pino). */
export interface NetworkLogger {
  info(message: string): void;
  warn(message: string): void;
}

export interface NetworkManagerOptions {
  /** Short instance name ([a-z0-9]{1,8}); names the bridge, veths (`b<instance>-<lease>`) and nft tables. */
  instance: string;
  /** Bridge name. @default `burrow-<instance>` */
  bridge?: string;
  /** IPv4 subnet of the sandboxes, CIDR (/12 … /30). The bridge takes the first address. */
  subnet: string;
  /** Extra destinations (CIDR) sandboxes may not reach even with internet access. 169.254.0.0/16 is always denied. */
  denyDestinations?: readonly string[];
  /** Per-sandbox egress limits (egress-limits.ts). @default none */
  egressLimits?: EgressLimitRates;
  /** MTU of the bridge and veths. @default the MTU of the default route's interface, else 1500 */
  mtu?: number;
  /** burrow-netattach, which plumbs namespaces for attach(). @default next to the launcher */
  netattachPath?: string;
  /** Runs nft, ip and burrow-netattach. @default forked from this process (the orchestrator passes the reaper's) */
  runCommand?: CommandRunner;
  logger?: NetworkLogger;
}

/** NetworkManager plus the crash-recovery entry point. */
export interface BurrowNetworkManager extends NetworkManager {
  readonly bridge: string;
  /** Gateway address of the sandboxes (the bridge's address). */
  readonly gateway: string;
  /**
   * After a crash: release attachments whose sandbox is not in `liveSandboxIds`, delete this instance's
   * veths that no attachment owns, and drop firewall set elements of addresses nobody leases.
   * Call after adopt() for every live sandbox. Returns the names of the veths it deleted.
   */
  reapOrphans(liveSandboxIds: Iterable<string>, signal?: AbortSignal): Promise<string[]>;
  /** The egress of the sandbox at `ip` (the resolver and the egress proxy judge by it), or undefined for none. */
  egressOf(ip: string): AttachedEgress | undefined;
  /**
   * Let the sandbox at `ip` reach `destinations` (on 80/443) on the direct path for `timeoutS` seconds
   * (direct-ruleset.ts); nothing for an address no sandbox has. The pairs go when its egress changes or it goes.
   */
  addDirect(ip: string, destinations: readonly string[], timeoutS: number, signal?: AbortSignal): Promise<void>;
  /**
   * Send the direct path's unjudged packets to NFQUEUE `queue` (the egress judge's) from now on, and the FIN/RST of
   * its allowed connections to NFLOG group `queue` (the judge's too).
   */
  setDirectQueue(queue: number, signal?: AbortSignal): Promise<void>;
  /** Called with a sandbox's address after its egress changed or it was released (the judge forgets it). */
  onEgressChange(listener: (ip: string) => void): () => void;
  /** Replace the DNAT rules of host services and of the egress proxy's listeners (ruleset.ts, redirectScript). */
  setRedirects(services: readonly HostServicePorts[], proxy: ReadonlyMap<number, number>, signal?: AbortSignal, tunnelPort?: number, inspectPort?: number): Promise<void>;
}

/** What the resolver and the egress proxy know of a sandbox by its address. */
export interface AttachedEgress {
  sandboxId: string;
  internet: boolean;
  rules: EgressRules | undefined;
}

interface Attachment {
  sandboxId: string;
  lease: number;
  binding: PortBinding;
  internet: boolean;
  /** allowOut/denyOut of the sandbox (egress-ruleset.ts); undefined when it never had any. */
  egress?: EgressRules | undefined;
  released: boolean;
  /** Destinations of its @direct pairs → when each expires (ms since the epoch). */
  direct: Map<string, number>;
}

type Exec = (cmd: string, args: readonly string[], opts?: ExecOptions) => Promise<string>;

export function createNetworkManager(options: NetworkManagerOptions): BurrowNetworkManager {
  const names = networkNames(options.instance, options.bridge);
  const subnet = parseCidr(options.subnet);
  if (subnet.length < 12) {
    throw new NetworkError("invalid_argument", `subnet ${options.subnet} is too large (at least /12)`);
  }
  const deny = (options.denyDestinations ?? []).map((d) => {
    const p = parseCidr(d);
    return `${formatIpv4(p.network)}/${p.length}`;
  });
  return new NetworkManagerImpl(names, subnet, deny, options);
}

/** MAC of a sandbox's eth0 (and of the bridge), derived from its address: stable and unique per host. */
function macOf(ip: number): string {
  const bytes = [0x02, 0xb0, ip >>> 24, (ip >>> 16) & 255, (ip >>> 8) & 255, ip & 255];
  return bytes.map((b) => b.toString(16).padStart(2, "0")).join(":");
}

class NetworkManagerImpl implements BurrowNetworkManager {
  readonly #names: NetworkNames;
  readonly #subnet: Ipv4Prefix;
  readonly #deny: readonly string[];
  readonly #opts: NetworkManagerOptions;
  readonly #pool: LeasePool;
  readonly #attachments = new Map<string, Attachment>();
  #mtu: number | undefined;
  readonly #exec: Exec;
  readonly #run: CommandRunner;
  readonly #egressListeners = new Set<(ip: string) => void>();
  /** @direct additions not yet applied: one nft transaction for those of the same turn. */
  #directLines: string[] = [];
  #directFlush: Promise<void> | undefined;
  /**
   * Releases of sandboxes killed together share one `ip -batch` and one nft transaction: each such command
   * serialises on the kernel's locks, so a release apiece made a mass kill about one sandbox per command pair.
   */
  readonly #releases = new BatchQueue<Attachment>({
    runBatch: (attachments) => this.#releaseAll(attachments),
    runOne: (a) => this.#release(a),
  });

  constructor(names: NetworkNames, subnet: Ipv4Prefix, deny: readonly string[], opts: NetworkManagerOptions) {
    this.#names = names;
    this.#subnet = subnet;
    this.#deny = deny;
    this.#opts = opts;
    this.#pool = new LeasePool(subnet);
    const run = opts.runCommand ?? spawnCommand;
    this.#run = run;
    this.#exec = (cmd, args, execOpts) => exec(cmd, args, execOpts, run);
    if (this.#pool.last.toString(16).length > names.leaseDigits) {
      throw new NetworkError("invalid_argument", `subnet ${opts.subnet} has more addresses than veth names can number`);
    }
  }

  get bridge(): string {
    return this.#names.bridge;
  }

  get gateway(): string {
    return this.#pool.address(GATEWAY_OFFSET);
  }

  async setup(signal?: AbortSignal): Promise<void> {
    const view = await readHostView(signal);
    assertNoConflicts(view, this.#subnet, this.#names.bridge);
    const mtu = this.#opts.mtu ?? uplinkMtu(view) ?? 1500;
    // Firewall first: the bridge never exists without its rules.
    await this.#exec("nft", ["-f", "-"], { input: setupScript({ names: this.#names, gateway: this.gateway, denyDestinations: this.#deny, limits: this.#opts.egressLimits }), signal });
    const br = this.#names.bridge;
    const gw = this.#subnet.network + GATEWAY_OFFSET;
    const batch: string[] = [];
    // A fixed bridge MAC: otherwise the bridge takes the lowest port MAC and the gateway's MAC changes
    // under the sandboxes' ARP caches whenever a sandbox joins or leaves.
    if (!linkExists(br)) batch.push(`link add name ${br} address ${macOf(gw)} mtu ${mtu} type bridge`);
    batch.push(`addr replace ${formatIpv4(gw)}/${this.#subnet.length} dev ${br}`, `link set ${br} up`);
    await this.#exec("ip", ["-batch", "-"], { input: `${batch.join("\n")}\n`, signal });
    // The host needs no IPv6 on the bridge; sandboxes get none either (attach).
    await writeFile(`/proc/sys/net/ipv6/conf/${br}/disable_ipv6`, "1\n").catch(ignoreMissing);
    await enableIpForward(this.#opts.instance);
    this.#mtu = mtu;
    this.#opts.logger?.info(`network ${br} ${formatIpv4(gw)}/${this.#subnet.length} ready (mtu ${mtu})`);
  }

  reserve(
    sandboxId: string,
    opts: { allowInternetAccess: boolean; ip?: string | undefined; egress?: EgressRules | undefined; signal?: AbortSignal | undefined },
  ): NetworkReservation {
    if (this.#mtu === undefined) throw new NetworkError("not_set_up", "reserve before setup()");
    const a = opts.ip === undefined ? this.#reserveFresh(sandboxId, opts.allowInternetAccess) : this.#reserveAgain(sandboxId, opts.ip, opts.allowInternetAccess);
    if (opts.egress !== undefined) a.egress = normalizeEgressRules(opts.egress);
    // The firewall elements may come after the veth: they name it, and until they exist its frames are dropped.
    const firewall = this.#exec("nft", ["-f", "-"], { input: bindScript(this.#names, a.binding, a.internet, a.egress), signal: opts.signal }).then(
      () => undefined,
    );
    // Awaited by the caller; handled here too, so a caller that fails first leaves no unhandled rejection.
    firewall.catch(() => undefined);
    const { hostVeth, mac, ip } = a.binding;
    const plumbing: NetPlumbing = {
      hostVeth,
      bridge: this.#names.bridge,
      mac,
      address: `${ip}/${this.#subnet.length}`,
      gateway: this.gateway,
      mtu: this.#mtu,
    };
    return { plumbing, network: this.#handle(a), firewall };
  }

  #reserveFresh(sandboxId: string, internet: boolean): Attachment {
    if (this.#attachments.has(sandboxId)) {
      throw new NetworkError("invalid_argument", `sandbox ${sandboxId} is already attached`);
    }
    // Skip leases whose veth name is still taken by an orphan that has not been reaped yet.
    const lease = this.#pool.take((l) => !linkExists(vethName(this.#names, l)));
    return this.#register(sandboxId, lease, internet);
  }

  /**
   * The sandbox's own address once more (a cold boot after a filesystem pause): its lease is still held by its
   * attachment, or (after a restart) taken again here. Its firewall elements are installed again either way,
   * since a host reboot took them with the tables.
   */
  #reserveAgain(sandboxId: string, ip: string, internet: boolean): Attachment {
    const lease = this.#pool.leaseOf(ip);
    const held = this.#attachments.get(sandboxId);
    if (held) {
      if (held.lease !== lease) throw new NetworkError("invalid_argument", `sandbox ${sandboxId} holds ${held.binding.ip}, not ${ip}`);
      held.internet = internet;
      return held;
    }
    if (this.#pool.has(lease)) throw new NetworkError("invalid_argument", `address ${ip} is already leased`);
    this.#pool.claim(lease);
    return this.#register(sandboxId, lease, internet);
  }

  async attach(
    sandboxId: string,
    pid: number,
    opts: { allowInternetAccess: boolean; signal?: AbortSignal },
  ): Promise<SandboxNetwork> {
    if (!Number.isSafeInteger(pid) || pid <= 0) throw new NetworkError("invalid_argument", `bad pid ${pid}`);
    const { plumbing, network, firewall } = this.reserve(sandboxId, opts);
    const netattach = this.#opts.netattachPath ?? join(dirname(launcherBinaryPath()), "burrow-netattach");
    try {
      const settled = await Promise.allSettled([firewall, this.#exec(netattach, ["--pid", String(pid), ...netPlumbingArgs(plumbing)], { signal: opts.signal })]);
      for (const r of settled) if (r.status === "rejected") throw r.reason;
    } catch (e) {
      await this.#releaseAfterFailure(this.#attachments.get(sandboxId), e);
      throw e;
    }
    return network;
  }

  async #releaseAfterFailure(a: Attachment | undefined, cause: unknown): Promise<void> {
    if (!a) return;
    await this.#release(a).catch((cleanupError: unknown) => {
      this.#opts.logger?.warn(`network of ${a.sandboxId} failed (${String(cause)}) and so did its clean-up: ${String(cleanupError)}`);
    });
  }

  adopt(sandboxId: string, ip: string, hostVeth: string, allowInternetAccess: boolean, egress?: EgressRules): SandboxNetwork {
    const lease = this.#pool.leaseOf(ip);
    if (vethName(this.#names, lease) !== hostVeth) {
      throw new NetworkError("invalid_argument", `veth ${hostVeth} does not belong to ${ip} in instance ${this.#opts.instance}`);
    }
    if (this.#attachments.has(sandboxId)) throw new NetworkError("invalid_argument", `sandbox ${sandboxId} is already attached`);
    if (this.#pool.has(lease)) throw new NetworkError("invalid_argument", `address ${ip} is already leased`);
    this.#pool.claim(lease);
    const a = this.#register(sandboxId, lease, allowInternetAccess);
    // Bookkeeping only: the chain survived in the kernel (setup() flushes only the shared chains).
    if (egress !== undefined) a.egress = normalizeEgressRules(egress);
    return this.#handle(a);
  }

  async reapOrphans(liveSandboxIds: Iterable<string>, signal?: AbortSignal): Promise<string[]> {
    const live = new Set(liveSandboxIds);
    for (const a of [...this.#attachments.values()]) if (!live.has(a.sandboxId)) await this.#release(a, signal);
    const orphans: { ifname: string; lease: number }[] = [];
    for (const ifname of await linkNames()) {
      const lease = leaseOfVeth(this.#names, ifname);
      if (lease !== undefined && !this.#pool.has(lease)) orphans.push({ ifname, lease });
    }
    const neighbours = orphans.map((o) => `neigh del ${this.#pool.address(o.lease)} dev ${this.#names.bridge}`);
    await deleteLinks(this.#exec, orphans.map((o) => o.ifname), signal, neighbours);
    await this.#dropStaleElements(signal);
    for (const o of orphans) this.#opts.logger?.info(`reaped orphaned veth ${o.ifname}`);
    return orphans.map((o) => o.ifname);
  }

  egressOf(ip: string): AttachedEgress | undefined {
    const a = this.#attachmentAt(ip);
    return a && { sandboxId: a.sandboxId, internet: a.internet, rules: a.egress };
  }

  addDirect(ip: string, destinations: readonly string[], timeoutS: number, signal?: AbortSignal): Promise<void> {
    const a = this.#attachmentAt(ip);
    const now = Date.now();
    // A pair with more than half its time left is not refreshed: most answers then cost no nft transaction.
    const stale = a ? destinations.filter((d) => (a.direct.get(d) ?? 0) - now < (timeoutS * 1000) / 2) : [];
    if (!a || stale.length === 0) return Promise.resolve();
    for (const d of stale) a.direct.set(d, now + timeoutS * 1000);
    this.#directLines.push(...directAddLines(this.#names, ip, stale, timeoutS));
    this.#directFlush ??= Promise.resolve().then(() => {
      const lines = this.#directLines;
      this.#directLines = [];
      this.#directFlush = undefined;
      return this.#exec("nft", ["-f", "-"], { input: `${lines.join("\n")}\n`, signal }).then(() => undefined);
    });
    return this.#directFlush;
  }

  async setDirectQueue(queue: number, signal?: AbortSignal): Promise<void> {
    await this.#exec("nft", ["-f", "-"], { input: directEndsScript(this.#names, queue), signal });
    await installQueueRule(this.#run, this.#names.bridge, queue, signal);
  }

  onEgressChange(listener: (ip: string) => void): () => void {
    this.#egressListeners.add(listener);
    return () => this.#egressListeners.delete(listener);
  }

  #egressChanged(a: Attachment): void {
    a.direct.clear();
    for (const listener of this.#egressListeners) {
      try {
        listener(a.binding.ip);
      } catch {
        // A listener's failure is its own.
      }
    }
  }

  #attachmentAt(ip: string): Attachment | undefined {
    // A walk over the attachments: a few thousand at most, against a DNS query or a new connection.
    for (const a of this.#attachments.values()) if (a.binding.ip === ip && !a.released) return a;
    return undefined;
  }

  async setRedirects(services: readonly HostServicePorts[], proxy: ReadonlyMap<number, number>, signal?: AbortSignal, tunnelPort?: number, inspectPort?: number): Promise<void> {
    await this.#exec("nft", ["-f", "-"], { input: redirectScript(this.#names, this.gateway, services, proxy, tunnelPort, inspectPort), signal });
  }

  async teardown(): Promise<void> {
    for (const a of [...this.#attachments.values()]) await this.#release(a);
    // Veths of sandboxes nobody attached in this process (not adopted after a restart) go too.
    const veths = (await linkNames()).filter((n) => leaseOfVeth(this.#names, n) !== undefined);
    await deleteLinks(this.#exec, [...veths, this.#names.bridge]);
    // Whether or not this process added it (`burrow down` after a crash cleans up after the server).
    await removeQueueRules(this.#run, this.#names.bridge).catch(() => undefined);
    await this.#exec("nft", ["-f", "-"], { input: teardownScript(this.#names) });
    await restoreIpForward(this.#opts.instance);
    this.#mtu = undefined;
    this.#opts.logger?.info(`network ${this.#names.bridge} torn down`);
  }

  #register(sandboxId: string, lease: number, internet: boolean): Attachment {
    const ip = this.#pool.address(lease);
    const binding = { hostVeth: vethName(this.#names, lease), mac: macOf(this.#subnet.network + lease), ip };
    const a: Attachment = { sandboxId, lease, binding, internet, released: false, direct: new Map() };
    this.#attachments.set(sandboxId, a);
    return a;
  }

  #handle(a: Attachment): SandboxNetwork {
    return {
      sandboxId: a.sandboxId,
      ip: a.binding.ip,
      hostVeth: a.binding.hostVeth,
      setInternetAccess: async (allowed: boolean) => {
        if (a.released) throw new NetworkError("invalid_argument", `sandbox ${a.sandboxId} is no longer attached`);
        await this.#exec("nft", ["-f", "-"], { input: egressScript(this.#names, a.binding.ip, allowed, a.egress) + this.#directDropScript(a) });
        a.internet = allowed;
        this.#egressChanged(a);
      },
      setEgress: (allowed, rules, signal) => this.#setEgress(a, allowed, rules, signal),
      release: () => (a.released ? Promise.resolve() : this.#releases.submit(a)),
      unplug: () => this.#unplug(a),
    };
  }

  /** Internet switch and rules replaced in one nft transaction: on failure the kernel and `a` keep the old ones. */
  async #setEgress(a: Attachment, internet: boolean, rules: EgressRules, signal?: AbortSignal): Promise<void> {
    if (a.released) throw new NetworkError("invalid_argument", `sandbox ${a.sandboxId} is no longer attached`);
    const egress = normalizeEgressRules(rules);
    // Pairs judged under the old rules go with them, in the same transaction.
    const input = egressScript(this.#names, a.binding.ip, internet, egress) + this.#directDropScript(a);
    await this.#exec("nft", ["-f", "-"], { input, signal });
    a.internet = internet;
    a.egress = egress;
    this.#egressChanged(a);
  }

  /** The veth and the bridge's neighbour entry go; the lease and the firewall elements stay (a filesystem pause). */
  async #unplug(a: Attachment, signal?: AbortSignal): Promise<void> {
    if (a.released) return;
    await deleteLinks(this.#exec, [a.binding.hostVeth], signal, [`neigh del ${a.binding.ip} dev ${this.#names.bridge}`]);
  }

  /** Idempotent: the veth may already be gone (its netns died with the sandbox). */
  async #release(a: Attachment, signal?: AbortSignal): Promise<void> {
    if (a.released) return;
    // The launcher's permanent ARP entry for the address lives on the bridge, not the veth: it outlives the link.
    await deleteLinks(this.#exec, [a.binding.hostVeth], signal, [`neigh del ${a.binding.ip} dev ${this.#names.bridge}`]);
    await this.#exec("nft", ["-f", "-"], { input: this.#unbindScript(a), signal });
    a.released = true;
    this.#attachments.delete(a.sandboxId);
    this.#pool.free(a.lease);
    this.#egressChanged(a);
  }

  #unbindScript(a: Attachment): string {
    return unbindScript(this.#names, a.binding) + this.#directDropScript(a);
  }

  /** Lines removing the attachment's @direct pairs (names judged under rules that are changing or going). */
  #directDropScript(a: Attachment): string {
    return directDropLines(this.#names, a.binding.ip, a.direct.keys()).map((l) => `${l}\n`).join("");
  }

  /** #release for many attachments in two commands; any failure fails them all (BatchQueue then retries each alone). */
  async #releaseAll(attachments: readonly Attachment[]): Promise<void> {
    const pending = [...new Set(attachments)].filter((a) => !a.released);
    if (pending.length === 0) return;
    const neighbours = pending.map((a) => `neigh del ${a.binding.ip} dev ${this.#names.bridge}`);
    await deleteLinks(this.#exec, pending.map((a) => a.binding.hostVeth), undefined, neighbours);
    await this.#exec("nft", ["-f", "-"], { input: pending.map((a) => this.#unbindScript(a)).join("") });
    for (const a of pending) {
      a.released = true;
      this.#attachments.delete(a.sandboxId);
      this.#pool.free(a.lease);
      this.#egressChanged(a);
    }
  }

  /**
   * Remove @internet, @proxied, @tunneled, @bound and @macs elements whose address nobody leases (left over from a
   * crash): a stale @tunneled element would send a later sandbox's TCP at that address, rules or not, to a proxy.
   */
  async #dropStaleElements(signal?: AbortSignal): Promise<void> {
    const t = this.#names.table;
    const addressSets = ["internet", PROXIED_SET, TUNNELED_SET];
    const [bridge, ...inet] = await Promise.all([
      this.#exec("nft", ["-j", "list", "table", "bridge", t], { signal }),
      ...addressSets.map((set) => this.#exec("nft", ["-j", "list", "set", "inet", t, set], { signal })),
    ]);
    const lines: string[] = [];
    addressSets.forEach((set, i) => {
      for (const ip of setElements(inet[i]!, set) as string[]) {
        if (!this.#leased(ip)) lines.push(`delete element inet ${t} ${set} { ${ip} }`);
      }
    });
    lines.push(...(await this.#staleEgressLines(signal)));
    for (const e of setElements(bridge, "bound")) {
      const [port, mac, ip] = e as [string, string, string];
      if (!this.#leased(ip)) lines.push(`delete element bridge ${t} bound { ${JSON.stringify(port)} . ${mac} . ${ip} }`);
    }
    for (const e of setElements(bridge, "macs")) {
      const [port, mac] = e as [string, string];
      const lease = leaseOfVeth(this.#names, port);
      if (lease === undefined || !this.#pool.has(lease)) {
        lines.push(`delete element bridge ${t} macs { ${JSON.stringify(port)} . ${mac} }`);
      }
    }
    if (lines.length > 0) await this.#exec("nft", ["-f", "-"], { input: `${lines.join("\n")}\n`, signal });
  }

  /** Egress and inspect chains (and their map elements) of addresses nobody leases. */
  async #staleEgressLines(signal?: AbortSignal): Promise<string[]> {
    const t = this.#names.table;
    const doc = JSON.parse(await this.#exec("nft", ["-j", "list", "chains", "inet"], { signal })) as {
      nftables?: { chain?: { table?: string; name?: string } }[];
    };
    const egress = new Set<string>();
    const inspect = new Set<string>();
    for (const item of doc.nftables ?? []) {
      if (item.chain?.table !== t) continue;
      const name = item.chain.name ?? "";
      const ip = ipOfEgressChain(name);
      if (ip !== undefined) egress.add(ip);
      const inspected = ipOfInspectChain(name);
      if (inspected !== undefined) inspect.add(inspected);
    }
    for (const [mapName, ips] of [[EGRESS_MAP, egress], [INSPECT_MAP, inspect]] as const) {
      const map = await this.#exec("nft", ["-j", "list", "map", "inet", t, mapName], { signal });
      for (const e of setElements(map, mapName)) {
        // A map element comes as [key, verdict].
        const key = Array.isArray(e) ? e[0] : e;
        if (typeof key === "string") ips.add(key);
      }
    }
    return [
      ...[...egress].filter((ip) => !this.#leased(ip)).flatMap((ip) => dropEgressChainLines(this.#names, ip)),
      ...[...inspect].filter((ip) => !this.#leased(ip)).flatMap((ip) => dropInspectChainLines(this.#names, ip)),
    ];
  }

  #leased(ip: string): boolean {
    try {
      return this.#pool.has(this.#pool.leaseOf(ip));
    } catch {
      return false; // outside the subnet: certainly not ours to keep
    }
  }
}

/** Elements of a named set from `nft -j` output: plain values, or arrays for concatenations. */
function setElements(json: string, setName: string): unknown[] {
  const doc = JSON.parse(json) as { nftables?: { set?: { name?: string; elem?: unknown[] } }[] };
  const out: unknown[] = [];
  for (const item of doc.nftables ?? []) {
    if (item.set?.name !== setName) continue;
    for (const el of item.set.elem ?? []) {
      // A concatenation comes as {"concat": [...]}; a plain element as the bare value.
      out.push(typeof el === "object" && el !== null && "concat" in el ? (el as { concat: unknown[] }).concat : el);
    }
  }
  return out;
}

/**
 * Delete links that exist. A veth disappears by itself when its sandbox's netns dies, possibly between
 * our look and the delete; `-force` carries on past that, and only links still present count as failure.
 */
async function deleteLinks(run: Exec, ifnames: readonly string[], signal?: AbortSignal, alsoTry: readonly string[] = []): Promise<void> {
  const present = ifnames.filter((n) => linkExists(n));
  if (present.length === 0 && alsoTry.length === 0) return;
  // `alsoTry`: more `ip` batch lines in the same process, whose failure (nothing to delete) is no failure.
  const batch = [...present.map((n) => `link del ${n}`), ...alsoTry].join("\n");
  try {
    await run("ip", ["-force", "-batch", "-"], { input: `${batch}\n`, signal });
  } catch (e) {
    if (present.some((n) => linkExists(n))) throw e;
  }
}

function ignoreMissing(e: unknown): void {
  if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
}
