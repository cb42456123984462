// HTTPS for the server's own port: the state directory's local CA issues a certificate for the local names at
// every start. HTTPS is an addition: when it cannot be set up (no openssl, an unusable CA) the server serves
// plain HTTP and says why.
import type { Logger } from "pino";
import type { ServerConfig } from "../config.js";
import { LOCAL_DOMAIN } from "../local-domain.js";
import { ensureLocalCa, issueServerCertificate, type ServerCertificateNames } from "./local-ca.js";
import type { SamePortTlsOptions } from "./same-port-tls.js";

/** The names getHost() URLs and the API are reached by on this host. */
export const LOCAL_CERTIFICATE_NAMES: ServerCertificateNames = Object.freeze({
  dns: Object.freeze([LOCAL_DOMAIN, `*.${LOCAL_DOMAIN}`, "localhost"]),
  ips: Object.freeze(["127.0.0.1", "::1"]),
});

export interface ServerTls extends SamePortTlsOptions {
  /** The CA certificate clients must trust. */
  readonly caCertFile: string;
}

/** The key and certificate to serve HTTPS with, or null (HTTPS off, or not possible here: logged). */
export async function prepareServerTls(
  cfg: Pick<ServerConfig, "tls" | "stateDir" | "headersTimeoutMs">,
  logger: Logger,
  signal?: AbortSignal,
): Promise<ServerTls | null> {
  if (!cfg.tls) return null;
  try {
    const ca = await ensureLocalCa(cfg.stateDir, { signal });
    if (ca.created) logger.info({ caCert: ca.certFile }, "created the local CA for HTTPS");
    const { key, cert, validTo } = await issueServerCertificate(ca, LOCAL_CERTIFICATE_NAMES, { signal });
    logger.info(
      { caCert: ca.certFile, validTo: validTo.toISOString() },
      "HTTPS on the same port for local names; clients trust the CA certificate (NODE_EXTRA_CA_CERTS, SSL_CERT_FILE, curl --cacert)",
    );
    return {
      caCertFile: ca.certFile,
      key,
      cert,
      handshakeTimeoutMs: cfg.headersTimeoutMs,
      onClientError: (err, remoteAddress) => logger.debug({ err, remoteAddress }, "TLS handshake failed"),
    };
  } catch (err) {
    logger.warn({ err }, "serving plain HTTP only: HTTPS could not be set up (BURROW_TLS=false silences this)");
    return null;
  }
}
