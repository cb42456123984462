// Where an envd is reached and with which token. Who owns the address decides: the orchestrator knows its
// sandboxes' addresses at launch, the server asks the gateway's upstream resolver, a test points at a local envd.
import { ENVD_PORT } from "@burrow/protocol";

export interface EnvdTarget {
  /** Host name or IP address (IPv6 without brackets). */
  host: string;
  port: number;
  /** The X-Access-Token envd accepts now (before /init: the init token); omit when it has none. */
  accessToken?: string | undefined;
}

/** envd at its standard port on a sandbox's own address. */
export function envdAt(address: string, accessToken?: string): EnvdTarget {
  return { host: address, port: ENVD_PORT, ...(accessToken === undefined ? {} : { accessToken }) };
}

export function envdBaseUrl(target: EnvdTarget): string {
  const host = target.host.includes(":") ? `[${target.host}]` : target.host;
  return `http://${host}:${target.port}`;
}
