// A "cluster LAN" on one machine: a bridge in the host's network namespace with a private test subnet and one network
// namespace per node joined to it by a veth pair, so that each Burrow node of a cluster test runs behind its own
// network stack (its own bridge, veths, nft tables, loopback and address) as on a machine of its own, and nodes reach
// each other and the NATS servers only across the LAN. The host keeps the LAN's first address (NATS servers listen
// there, the test's SDK calls go from there). Removed by name: deleting a namespace takes its veth end, the node's
// bridge, sandbox veths and nft tables with it; the LAN bridge and host veth ends go with `ip link del`.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import type { TestInstance } from "../helpers/test-instance.js";
import { instanceBeside } from "./cli-nodes.js";

/** No other test uses it: instances take 10.200-249.0.0/16 (test-instance.ts). */
const LAN_PREFIX = "10.251.0";
const LAN_LENGTH = 24;

function ip(args: string[]): string {
  return execFileSync("ip", args, { encoding: "utf8" });
}

export interface LanNode {
  name: string;
  /** The node's network namespace and its address on the LAN, which the server listens on. */
  instance: TestInstance & { netns: string; host: string };
}

export class ClusterLan {
  /** The host's address on the LAN. */
  readonly hostAddress = `${LAN_PREFIX}.1`;
  readonly nodes: LanNode[] = [];
  readonly #bridge: string;
  readonly #tag: string;

  private constructor(tag: string) {
    this.#tag = tag;
    this.#bridge = `blan${tag}`;
  }

  /**
   * Make the LAN and a namespace per name, each with a test instance (state directory, instance tag, a bridge subnet
   * of its own). Fails if the LAN subnet is routed already (another copy of a suite using it).
   */
  static create(names: readonly string[], label: string): ClusterLan {
    if (ip(["-4", "route", "show"]).includes(`${LAN_PREFIX}.0/${LAN_LENGTH}`)) {
      throw new Error(`${LAN_PREFIX}.0/${LAN_LENGTH} is in use: is another cluster LAN up?`);
    }
    const lan = new ClusterLan(randomBytes(2).toString("hex"));
    try {
      ip(["link", "add", lan.#bridge, "type", "bridge"]);
      ip(["addr", "add", `${lan.hostAddress}/${LAN_LENGTH}`, "dev", lan.#bridge]);
      ip(["link", "set", lan.#bridge, "up"]);
      names.forEach((name, i) => lan.#addNode(name, i, label));
    } catch (err) {
      lan.destroy();
      throw err;
    }
    return lan;
  }

  #addNode(name: string, i: number, label: string): void {
    const netns = `burrow-lan${this.#tag}-${i}`;
    const hostEnd = `vlan${this.#tag}${i}`;
    const address = `${LAN_PREFIX}.${i + 2}`;
    const instance = instanceBeside(`${label}${i}`, this.nodes.map((n) => n.instance));
    const node: LanNode = { name, instance: { ...instance, netns, host: address } };
    this.nodes.push(node);
    ip(["netns", "add", netns]);
    ip(["link", "add", hostEnd, "type", "veth", "peer", "name", "lan0", "netns", netns]);
    ip(["link", "set", hostEnd, "master", this.#bridge, "up"]);
    ip(["-n", netns, "addr", "add", `${address}/${LAN_LENGTH}`, "dev", "lan0"]);
    ip(["-n", netns, "link", "set", "lan0", "up"]);
    ip(["-n", netns, "link", "set", "lo", "up"]);
  }

  /** PIDs of the processes in a node's namespace: its server and what it runs beside it (not its sandboxes, which have namespaces of their own). */
  pidsIn(netns: string): number[] {
    return ip(["netns", "pids", netns]).split("\n").filter(Boolean).map(Number);
  }

  #deleteLink(name: string): void {
    try {
      ip(["link", "del", name]);
    } catch (err) {
      if (this.linksOf().includes(name)) throw err;
    }
  }

  /** Names of the links in a namespace (the host's without one). */
  linksOf(netns?: string): string[] {
    const out = ip([...(netns === undefined ? [] : ["-n", netns]), "-o", "link", "show"]);
    return [...out.matchAll(/^\d+: ([^:@]+)[:@]/gm)].map((m) => m[1]!);
  }

  /** The namespaces, the LAN bridge and the host's veth ends; each whatever happened to the others. */
  destroy(): void {
    const failures: unknown[] = [];
    const step = (fn: () => unknown) => {
      try {
        fn();
      } catch (err) {
        failures.push(err);
      }
    };
    const present = ip(["netns", "list"]);
    for (const node of this.nodes) {
      if (!present.includes(node.instance.netns)) continue;
      // Whatever a node left running there (its server stopped, `burrow down` done, nothing should be) would keep the
      // namespace alive after its name is gone.
      for (const pid of this.pidsIn(node.instance.netns)) step(() => process.kill(pid, "SIGKILL"));
      step(() => ip(["netns", "del", node.instance.netns]));
    }
    // A host veth end goes with its namespace, but the kernel frees a namespace a moment later: one still listed may
    // be gone by the time it is deleted, which is no failure.
    for (let i = 0; i < this.nodes.length; i++) {
      const veth = `vlan${this.#tag}${i}`;
      if (this.linksOf().includes(veth)) step(() => this.#deleteLink(veth));
    }
    if (this.linksOf().includes(this.#bridge)) step(() => this.#deleteLink(this.#bridge));
    if (failures.length > 0) throw failures[0];
  }
}
