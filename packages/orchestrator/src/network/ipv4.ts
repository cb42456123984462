// IPv4 arithmetic on unsigned 32-bit integers: enough to lease addresses and compare prefixes.
import { NetworkError } from "./network-error.js";

export interface Ipv4Prefix {
  /** Network address as an unsigned 32-bit integer. */
  readonly network: number;
  readonly length: number;
}

export function parseIpv4(text: string): number {
  const parts = text.split(".");
  if (parts.length !== 4) throw new NetworkError("invalid_argument", `'${text}' is not an IPv4 address`);
  let value = 0;
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part) || Number(part) > 255) {
      throw new NetworkError("invalid_argument", `'${text}' is not an IPv4 address`);
    }
    value = value * 256 + Number(part);
  }
  return value;
}

export function formatIpv4(value: number): string {
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join(".");
}

/** Parse `a.b.c.d/n`; the address is masked to the network (10.1.2.3/16 → 10.1.0.0/16). */
export function parseCidr(text: string): Ipv4Prefix {
  const [addr, len, ...rest] = text.split("/");
  const length = Number(len);
  if (addr === undefined || rest.length > 0 || !/^\d{1,2}$/.test(len ?? "") || length > 32) {
    throw new NetworkError("invalid_argument", `'${text}' is not an IPv4 CIDR (a.b.c.d/n)`);
  }
  return { network: (parseIpv4(addr) & mask(length)) >>> 0, length };
}

export function formatCidr(p: Ipv4Prefix): string {
  return `${formatIpv4(p.network)}/${p.length}`;
}

function mask(length: number): number {
  return length === 0 ? 0 : (0xffffffff << (32 - length)) >>> 0;
}

/** Number of addresses in the prefix (2^(32-n)). */
export function prefixSize(p: Ipv4Prefix): number {
  return 2 ** (32 - p.length);
}

export function contains(p: Ipv4Prefix, addr: number): boolean {
  return ((addr & mask(p.length)) >>> 0) === p.network;
}

/** Two prefixes overlap exactly when one contains the other's network address. */
export function overlaps(a: Ipv4Prefix, b: Ipv4Prefix): boolean {
  const shorter = a.length <= b.length ? a : b;
  const longer = shorter === a ? b : a;
  return contains(shorter, longer.network);
}
