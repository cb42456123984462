/** Keepalive interval the client asked for (`Keepalive-Ping-Interval`, seconds); upstream's default is 90 s. */
export function keepaliveIntervalMs(headers: Headers): number {
  const raw = headers.get("keepalive-ping-interval");
  const seconds = raw === null ? NaN : Number(raw);
  return Number.isFinite(seconds) && seconds > 0 ? Math.min(seconds, 3600) * 1000 : 90_000;
}

/** `Connect-Timeout-Ms` as a number, or undefined when absent/invalid (0 or missing = no deadline). */
export function connectTimeoutMs(headers: Headers): number | undefined {
  const raw = headers.get("connect-timeout-ms");
  if (raw === null || !/^\d{1,10}$/.test(raw)) return undefined;
  const ms = Number(raw);
  return ms > 0 ? ms : undefined;
}
