// The domain the API advertises for getHost() URLs (`<port>-<id>.<domain>`). By default it is
// `burrow.localhost:<port>`: programs on this host reach the server by those names when `*.burrow.localhost`
// resolves to loopback, which browsers and curl do by themselves and glibc programs (Node, Python) do with
// libnss-myhostname (`npm start` installs it). Two labels under `localhost`, because browsers accept a wildcard
// certificate (`*.burrow.localhost`) only for such a name.
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import type { Logger } from "pino";
import { AUTO_DOMAIN, type ServerConfig } from "./config.js";

export const LOCAL_DOMAIN = "burrow.localhost";
/** A name of the shape getHost() produces, checked at start. */
const PROBE_NAME = `49983-probe.${LOCAL_DOMAIN}`;
/** Resolution of a `.localhost` name is local; a resolver that has to ask DNS for it is not worth waiting for. */
const LOOKUP_TIMEOUT_MS = 3_000;

/** The advertised domain once the port is known: the configured one, or the local default where it works. */
export type DomainForPort = (port: number) => string | null;

/**
 * Decide, once at start, what `domain` the API returns. `"auto"` becomes `burrow.localhost:<port>` when the server
 * listens where that name leads (a loopback address, or all addresses) and the name resolves to loopback here;
 * otherwise null (the SDK then falls back to E2B_DOMAIN), with a warning that says what to do.
 */
export async function resolveDomain(cfg: Pick<ServerConfig, "domain" | "host">, logger: Logger): Promise<DomainForPort> {
  if (cfg.domain !== AUTO_DOMAIN) return () => cfg.domain;
  if (!listensOnLoopback(cfg.host)) {
    logger.warn(
      { host: cfg.host },
      `getHost() URLs will not reach this server: it does not listen on loopback, where ${LOCAL_DOMAIN} leads; set BURROW_DOMAIN to a name (with a wildcard DNS record) that leads to ${cfg.host}`,
    );
    return () => null;
  }
  const addresses = await resolveLoopback(PROBE_NAME);
  if (!addresses.some((address) => reachesHost(address, cfg.host))) {
    logger.warn(
      { name: PROBE_NAME, resolved: addresses },
      `getHost() URLs will not reach this server from Node or Python: *.${LOCAL_DOMAIN} does not resolve to the server's loopback address here; install libnss-myhostname (npm start does) and put 'myhostname' on the hosts line of /etc/nsswitch.conf, or set BURROW_DOMAIN`,
    );
    return () => null;
  }
  return (port) => `${LOCAL_DOMAIN}:${port}`;
}

/** The addresses `name` resolves to, as the system resolver (getaddrinfo) gives them; none on failure or timeout. */
async function resolveLoopback(name: string): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<[]>((resolve) => (timer = setTimeout(() => resolve([]), LOOKUP_TIMEOUT_MS)));
  try {
    const found = lookup(name, { all: true }).then((rows) => rows.map((row) => row.address), () => [] as string[]);
    return await Promise.race([found, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function isLoopback(address: string): boolean {
  return isIP(address) === 4 ? address.startsWith("127.") : address === "::1";
}

function listensOnLoopback(host: string): boolean {
  return host === "localhost" || host === "0.0.0.0" || host === "::" || isLoopback(host);
}

/** Whether a client that connects to `address` reaches a server listening on `host`. */
function reachesHost(address: string, host: string): boolean {
  if (!isLoopback(address)) return false;
  if (host === "::" || host === "localhost") return true;
  if (host === "0.0.0.0") return isIP(address) === 4;
  return address === host;
}
