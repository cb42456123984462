// HTTPS on the server's port with a certificate from a CA of the state directory's own.
export { acceptTlsOnSamePort, type SamePortTls, type SamePortTlsOptions } from "./same-port-tls.js";
export { ensureLocalCa, issueServerCertificate, localCaPaths, readIfExists, type LocalCa, type LocalCaPaths, type ServerCertificate } from "./local-ca.js";
export { prepareServerTls, LOCAL_CERTIFICATE_NAMES, type ServerTls } from "./server-tls.js";
