// `burrow ca`: where the local CA certificate is, the one that signs the HTTPS certificate `burrow up` serves on its
// port (`https://` + getHost() URLs, as E2B's docs write them). Clients trust it explicitly; nothing is installed.
import { readFile } from "node:fs/promises";
import { defineCommand } from "../command.js";
import { DEFAULT_STATE_DIR, resolveCliConfig } from "../config.js";

export const ca = defineCommand({
  name: "ca",
  summary: "Print the path of the local CA certificate behind the server's HTTPS (created when missing)",
  notes: [
    "Programs that use https:// URLs of this host's Burrow (getHost() URLs, the API) trust that certificate:",
    "  export NODE_EXTRA_CA_CERTS=$(burrow ca)        Node (read when the process starts)",
    "  curl --cacert \"$(burrow ca)\" https://…",
    "  SSL_CERT_FILE=$(burrow ca) python3 …           Python (in place of the system's CAs, for that process)",
    "For every program at once (curl, Python; Node only with --use-openssl-ca), as root:",
    "  cp \"$(burrow ca)\" /usr/local/share/ca-certificates/burrow.crt && update-ca-certificates",
    "The CA signs names under localhost and loopback addresses only, and its key stays in the state directory.",
  ].join("\n"),
  options: {
    "state-dir": { type: "string", value: "DIR", description: `State directory of the server (default ${DEFAULT_STATE_DIR}, env BURROW_STATE_DIR)` },
    pem: { type: "boolean", description: "Print the certificate itself (PEM) instead of its path" },
  },
  async run({ values, env }) {
    const config = resolveCliConfig({ stateDir: values["state-dir"] }, env);
    // The server's TLS module alone, not the whole server.
    const { ensureLocalCa } = await import("@burrow/server/tls");
    const { certFile } = await ensureLocalCa(config.stateDir);
    process.stdout.write(values.pem ? await readFile(certFile, "utf8") : `${certFile}\n`);
  },
});
