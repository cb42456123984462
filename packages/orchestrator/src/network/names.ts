// Every kernel object of an instance carries a name derived from the instance, so a restarted
// orchestrator (or an operator) can find what it owns without any state file.
import { NetworkError } from "./network-error.js";

/** Linux limits interface names to 15 bytes (IFNAMSIZ 16 with the NUL). */
export const IFNAME_MAX = 15;

/** Same rule as the orchestrator config: the instance is part of interface names, so it is short. */
const INSTANCE_PATTERN = /^[a-z0-9]{1,8}$/;
const IFNAME_PATTERN = /^[A-Za-z0-9_.-]{1,15}$/;

export interface NetworkNames {
  /** nftables table name, used in both the `inet` and the `bridge` family. */
  readonly table: string;
  readonly bridge: string;
  /** Prefix of every host-side veth of this instance; the lease number in hex follows. */
  readonly vethPrefix: string;
  /** Hex digits left for the lease number in a veth name. */
  readonly leaseDigits: number;
}

export function networkNames(instance: string, bridge?: string): NetworkNames {
  if (!INSTANCE_PATTERN.test(instance)) {
    throw new NetworkError("invalid_argument", `instance '${instance}' must be 1-8 characters of [a-z0-9]`);
  }
  const bridgeName = bridge ?? `burrow-${instance}`;
  if (!IFNAME_PATTERN.test(bridgeName)) {
    throw new NetworkError("invalid_argument", `bridge name '${bridgeName}' must be 1-15 characters of [A-Za-z0-9_.-]`);
  }
  // The '-' ends the prefix: instance names have none, so no instance's prefix is a prefix of another's
  // ("bab-" vs "babc-"), and nft wildcards like "bab-*" match exactly one instance's veths.
  const vethPrefix = `b${instance}-`;
  if (bridgeName.startsWith(vethPrefix)) {
    throw new NetworkError("invalid_argument", `bridge name '${bridgeName}' must not start with '${vethPrefix}'`);
  }
  return { table: `burrow_${instance}`, bridge: bridgeName, vethPrefix, leaseDigits: IFNAME_MAX - vethPrefix.length };
}

/** Host-side veth name of a lease: deterministic, so orphans are recognisable after a crash. */
export function vethName(names: NetworkNames, lease: number): string {
  return `${names.vethPrefix}${lease.toString(16)}`;
}

/** The lease number encoded in a veth name of this instance, or undefined for any other interface. */
export function leaseOfVeth(names: NetworkNames, ifname: string): number | undefined {
  if (!ifname.startsWith(names.vethPrefix)) return undefined;
  const hex = ifname.slice(names.vethPrefix.length);
  return /^[0-9a-f]{1,8}$/.test(hex) ? Number.parseInt(hex, 16) : undefined;
}
