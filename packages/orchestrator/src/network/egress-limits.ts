// Per-sandbox egress limits in nftables, so they hold whichever way a connection leaves (forwarded, or through the
// egress proxy and host services on the gateway): a meter per sandbox address (dynamic sets whose elements carry
// their own token bucket) on connections the sandbox opened — `ct direction original` leaving the sandbox,
// `ct direction reply` coming back to it — so envd's traffic (connections the host opens into the sandbox: file
// transfers, commands) is never counted. Past the connection rate a new TCP connection gets a reset, so clients
// fail at once instead of retrying SYNs; past the byte rate packets are dropped, which TCP answers by slowing down.
// Each bucket holds one second's worth (the burst), so a short burst at the start is all a sandbox gets beyond the rate.
import type { NetworkNames } from "./names.js";

export interface EgressLimitRates {
  /** New TCP connections per second per sandbox. */
  connectionsPerSecond?: number | undefined;
  /** Bytes per second per sandbox, each way. */
  bytesPerSecond?: number | undefined;
}

export const LIMITS_IN_CHAIN = "limits_in";
export const LIMITS_OUT_CHAIN = "limits_out";
const SETS = ["conn_rate", "bytes_up", "bytes_down"] as const;
/** Idle meters go after this; a busy one is refreshed by every packet it counts. */
const METER_TIMEOUT = "1m";

/**
 * Chains and meters of the limits, part of setupScript's transaction: chains flushed and refilled, meters emptied
 * (a restart with other rates must not leave buckets of the old ones behind). No rules when no limit is set.
 */
export function egressLimitsScript(names: NetworkNames, limits: EgressLimitRates): string {
  const t = names.table;
  const br = JSON.stringify(names.bridge);
  const lines: string[] = [];
  for (const set of SETS) {
    lines.push(`add set inet ${t} ${set} { type ipv4_addr; flags dynamic,timeout; timeout ${METER_TIMEOUT}; size 65536; }`, `flush set inet ${t} ${set}`);
  }
  lines.push(
    `add chain inet ${t} ${LIMITS_IN_CHAIN} { type filter hook prerouting priority -150; policy accept; }`,
    `flush chain inet ${t} ${LIMITS_IN_CHAIN}`,
    `add chain inet ${t} ${LIMITS_OUT_CHAIN} { type filter hook postrouting priority -150; policy accept; }`,
    `flush chain inet ${t} ${LIMITS_OUT_CHAIN}`,
  );
  const connections = positive("connectionsPerSecond", limits.connectionsPerSecond);
  const bytes = positive("bytesPerSecond", limits.bytesPerSecond);
  if (connections !== undefined) {
    lines.push(
      `add rule inet ${t} ${LIMITS_IN_CHAIN} iifname ${br} meta l4proto tcp ct state new update @conn_rate { ip saddr limit rate over ${connections}/second burst ${connections} packets } counter reject with tcp reset`,
    );
  }
  if (bytes !== undefined) {
    const rate = `limit rate over ${bytes} bytes/second burst ${bytes} bytes`;
    lines.push(
      `add rule inet ${t} ${LIMITS_IN_CHAIN} iifname ${br} ct direction original update @bytes_up { ip saddr ${rate} } counter drop`,
      `add rule inet ${t} ${LIMITS_OUT_CHAIN} oifname ${br} ct direction reply update @bytes_down { ip daddr ${rate} } counter drop`,
    );
  }
  return `${lines.join("\n")}\n`;
}

function positive(name: string, value: number | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`egress limit ${name} must be a positive integer, got ${value}`);
  return value;
}
