// Entry point inside a code-interpreter sandbox: started by the template's start command with the runtime's
// node, listens on 49999 and creates the default python and javascript contexts.
import { resolveConfig } from "./config.js";
import { createCodeInterpreter } from "./code-interpreter.js";
import { createStderrLogger } from "./log.js";

const logger = createStderrLogger();
process.on("uncaughtException", (err) => logger.error("uncaught exception", { err, stack: err.stack }));
process.on("unhandledRejection", (err) => logger.error("unhandled rejection", { err }));

const interpreter = await createCodeInterpreter(resolveConfig(), logger);
let stopping = false;
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    void interpreter.close().finally(() => process.exit(0));
  });
}
try {
  const address = await interpreter.listen();
  logger.info("listening", { host: address.address, port: address.port });
} catch (err) {
  logger.error("cannot listen", { err });
  await interpreter.close();
  process.exit(1);
}
