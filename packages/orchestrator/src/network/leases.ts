// Address leases within the sandbox subnet. A lease is the host offset inside the subnet: offset 1 is
// the bridge (gateway), sandboxes get 2 … size-2 (the last address is broadcast).
import { contains, formatIpv4, type Ipv4Prefix, parseIpv4, prefixSize } from "./ipv4.js";
import { NetworkError } from "./network-error.js";

export const GATEWAY_OFFSET = 1;
const FIRST_LEASE = 2;

export class LeasePool {
  readonly #subnet: Ipv4Prefix;
  readonly #last: number;
  readonly #taken = new Set<number>();
  // Allocation rotates through the subnet instead of reusing the lowest free address, so an address
  // just released is not handed to the next sandbox while stale conntrack entries still name it.
  #cursor = FIRST_LEASE;

  constructor(subnet: Ipv4Prefix) {
    if (subnet.length > 30) {
      throw new NetworkError("invalid_argument", `subnet /${subnet.length} is too small (at most /30)`);
    }
    this.#subnet = subnet;
    this.#last = prefixSize(subnet) - 2;
  }

  /** Highest lease number the subnet can hand out. */
  get last(): number {
    return this.#last;
  }

  /** Take the next free lease for which `usable` holds (e.g. its veth name is not in use by an orphan). */
  take(usable: (lease: number) => boolean = () => true): number {
    const span = this.#last - FIRST_LEASE + 1;
    for (let i = 0; i < span; i++) {
      const lease = FIRST_LEASE + ((this.#cursor - FIRST_LEASE + i) % span);
      if (this.#taken.has(lease) || !usable(lease)) continue;
      this.#taken.add(lease);
      this.#cursor = lease + 1 > this.#last ? FIRST_LEASE : lease + 1;
      return lease;
    }
    throw new NetworkError("exhausted", `no free address left in ${formatIpv4(this.#subnet.network)}/${this.#subnet.length}`);
  }

  /** Mark a known lease as taken (re-adoption). */
  claim(lease: number): void {
    if (lease < FIRST_LEASE || lease > this.#last) {
      throw new NetworkError("invalid_argument", `lease ${lease} is outside the sandbox range`);
    }
    this.#taken.add(lease);
  }

  free(lease: number): void {
    this.#taken.delete(lease);
  }

  has(lease: number): boolean {
    return this.#taken.has(lease);
  }

  address(lease: number): string {
    return formatIpv4(this.#subnet.network + lease);
  }

  /** Lease number of an address inside the subnet. */
  leaseOf(ip: string): number {
    const value = parseIpv4(ip);
    if (!contains(this.#subnet, value)) {
      throw new NetworkError("invalid_argument", `${ip} is not inside the sandbox subnet`);
    }
    return value - this.#subnet.network;
  }
}
