// envd entry point: the daemon inside every sandbox (started by the sandbox's init, from the runtime mount).
import { ENVD_VERSION } from "@burrow/protocol/constants";
import { resolveEnvdConfigFromEnv } from "./config.js";
import { createStderrLogger } from "./log.js";
import { createEnvdServer } from "./server.js";

const log = createStderrLogger();
const config = resolveEnvdConfigFromEnv();
const envd = createEnvdServer({ initToken: config.initToken, logger: log });

// The logger never throws (see log.ts); a write that Node itself makes to stderr (a warning) and that fails, the
// sandbox disk being full, must not become an uncaught exception either.
process.stderr.on("error", () => {});
process.on("uncaughtException", (err) => log.error("uncaught exception", { err, stack: err.stack }));
process.on("unhandledRejection", (err) => log.error("unhandled rejection", { err }));

let stopping = false;
for (const sig of ["SIGTERM", "SIGINT"] as const) {
  process.on(sig, () => {
    if (stopping) return;
    stopping = true;
    log.info("stopping", { signal: sig });
    void envd.close().finally(() => process.exit(0));
  });
}

// The bundle is CommonJS (Node starts a CommonJS entry faster than an ES module one): no top-level await.
envd.listen(config.port, config.host).then(
  (addr) => log.info("listening", { version: ENVD_VERSION, host: addr.address, port: addr.port, initToken: config.initToken !== undefined }),
  (err: unknown) => {
    log.error("cannot listen", { err, port: config.port, host: config.host });
    process.exit(1);
  },
);
