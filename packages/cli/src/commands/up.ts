// `burrow up`: build what is missing (base template, envd runtime), start the orchestrator and the server,
// print how to connect, and run until SIGINT/SIGTERM. Stopping leaves sandboxes running: the next `up`
// re-adopts them.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { envdRuntimeFiles } from "@burrow/envd";
import { DEFAULT_STATE_DIR, DEFAULT_SUBNET, LocalOrchestrator } from "@burrow/orchestrator";
import { createBus, createBusMetrics, type Bus, type BusMetrics } from "@burrow/bus";
import { Registry } from "prom-client";
import { startServer } from "@burrow/server";
import { CliError } from "../cli-error.js";
import { pino } from "pino";

export async function up(argv: string[]): Promise<void> {
  const env = process.env;
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: "string", default: env.BURROW_PORT ?? "3000" },
      host: { type: "string", default: env.BURROW_HOST ?? "127.0.0.1" },
      "state-dir": { type: "string", default: env.BURROW_STATE_DIR ?? DEFAULT_STATE_DIR },
      "pool-size": { type: "string", default: env.BURROW_POOL_SIZE ?? "2" },
      instance: { type: "string", default: env.BURROW_INSTANCE ?? "main" },
      subnet: { type: "string", default: env.BURROW_SUBNET ?? DEFAULT_SUBNET },
      domain: { type: "string", default: env.BURROW_DOMAIN },
      bus: { type: "string", default: env.BURROW_BUS ?? "embedded" },
    },
  });
  const logger = pino({ level: env.BURROW_LOG_LEVEL ?? "info" });
  const stateDir = values["state-dir"];
  const progress = (line: string) => process.stderr.write(`[burrow] ${line}\n`);
  const orchestrator = await LocalOrchestrator.create({
    config: {
      stateDir,
      instance: values.instance,
      subnet: values.subnet,
      pool: { template: "base", size: Number(values["pool-size"]) },
    },
    envd: envdRuntimeFiles(),
    logger: logger.child({ component: "orchestrator" }),
    onProgress: progress,
  });
  const port = Number(values.port);
  // getHost(port) in the SDK is `<port>-<id>.<domain>`: the domain carries the server's port so that those
  // host names reach the gateway (*.localhost resolves to loopback in browsers and curl).
  const domain = values.domain ?? `localhost:${port}`;
  // One Prometheus registry for the server's and the bus's metrics, both served on /metrics.
  const registry = new Registry();
  let bus: Bus | undefined;
  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    bus = await openBus(values.bus, stateDir, createBusMetrics(registry));
    server = await startServer(
      { host: values.host, port, stateDir, domain },
      { orchestrator, templates: orchestrator.templateBuilder, bus, registry, logger: logger.child({ component: "server" }) },
    );
  } catch (error) {
    // E.g. the port is taken: stop the warm pool and background work so that the process can exit.
    await bus?.close();
    await orchestrator.close();
    throw error;
  }
  const apiKey = env.BURROW_API_KEY ?? (await readFile(join(stateDir, "api-key"), "utf8")).trim();
  const url = `http://${values.host === "0.0.0.0" ? "localhost" : values.host}:${server.port}`;
  process.stdout.write(
    [
      `Burrow is listening on ${url}`,
      "Point the official e2b SDK at it with:",
      `  export E2B_API_URL=${url}`,
      `  export E2B_SANDBOX_URL=${url}`,
      `  export E2B_API_KEY=${apiKey}`,
      "",
    ].join("\n"),
  );
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
  progress("stopping (running sandboxes keep running and are re-adopted by the next 'burrow up')");
  await server.close();
  await bus.close();
  await orchestrator.close();
}

/** `embedded` (SQLite in the state directory, the default) or a NATS URL (`nats://host:4222`) for JetStream. */
function openBus(spec: string, stateDir: string, metrics: BusMetrics): Promise<Bus> {
  if (spec === "embedded") return createBus({ kind: "embedded", path: join(stateDir, "bus.db"), metrics });
  if (/^(nats|tls):\/\//.test(spec)) return createBus({ kind: "nats", servers: spec.split(","), metrics });
  throw new CliError(`--bus must be 'embedded' or a nats:// URL, got '${spec}'`, 2);
}
