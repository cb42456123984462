// `burrow up`: build what is missing (base template, envd runtime), start the orchestrator and the server,
// print how to connect, and run until SIGINT/SIGTERM. Stopping leaves sandboxes running: the next `up`
// re-adopts them. This is the composition root: the only place that loads the orchestrator, bus and server.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Bus } from "@burrow/bus";
import { defineCommand } from "../command.js";
import { type CliConfig, DEFAULT_BUS, DEFAULT_INSTANCE, DEFAULT_POOL_SIZE, DEFAULT_STATE_DIR, DEFAULT_SUBNET, resolveCliConfig } from "../config.js";

export const up = defineCommand({
  name: "up",
  summary: "Start the server (orchestrator, warm pool, bus, API) and run until stopped",
  notes: [
    "Server settings without a flag come from the server's own BURROW_* environment variables (BURROW_API_KEY,",
    "and any the server documents); BURROW_LOG_LEVEL sets the log level (default info).",
    "Stopping (Ctrl-C, SIGTERM) leaves sandboxes running; the next 'burrow up' takes them back.",
  ].join("\n"),
  options: {
    port: { type: "string", value: "PORT", description: "Port of the API and the gateway; 0 picks a free one (default 3000, env BURROW_PORT)" },
    host: { type: "string", value: "HOST", description: "Interface to listen on (default 127.0.0.1, env BURROW_HOST)" },
    domain: { type: "string", value: "DOMAIN", description: "Domain in sandbox responses, for getHost() (default burrow.localhost:PORT where that resolves to loopback, env BURROW_DOMAIN)" },
    "state-dir": { type: "string", value: "DIR", description: `Where everything is kept (default ${DEFAULT_STATE_DIR}, env BURROW_STATE_DIR)` },
    instance: { type: "string", value: "NAME", description: `Keeps instances on one host apart (default ${DEFAULT_INSTANCE}, env BURROW_INSTANCE)` },
    subnet: { type: "string", value: "CIDR", description: `Sandbox addresses (default ${DEFAULT_SUBNET}, env BURROW_SUBNET)` },
    "pool-size": { type: "string", value: "N", description: `Idle sandboxes kept ready; 0 = no pool (default ${DEFAULT_POOL_SIZE}, env BURROW_POOL_SIZE)` },
    bus: { type: "string", value: "SPEC", description: `'embedded' or nats://HOST:4222[,…] (default ${DEFAULT_BUS}, env BURROW_BUS)` },
  },
  async run({ values }) {
    const config = resolveCliConfig({
      stateDir: values["state-dir"],
      instance: values.instance,
      subnet: values.subnet,
      poolSize: values["pool-size"],
      bus: values.bus,
      host: values.host,
      port: values.port,
      domain: values.domain,
    });
    await runServer(config);
  },
});

async function runServer(config: CliConfig): Promise<void> {
  const [{ envdRuntimeFiles }, { codeInterpreterRuntimeFiles }, { mcpGatewayRuntimeFiles }, { createMcpHttpHandler }, { LocalOrchestrator }, { createBus, createBusMetrics }, { resolveServerConfig, startServer }, { pino }, { Registry }] =
    await Promise.all([
      import("@burrow/envd"),
      import("@burrow/code-interpreter/runtime-files"),
      import("@burrow/mcp/gateway-runtime-files"),
      import("@burrow/mcp"),
      import("@burrow/orchestrator"),
      import("@burrow/bus"),
      import("@burrow/server"),
      import("pino"),
      import("prom-client"),
    ]);
  // Resolved here, by the server's resolver, for the host to print. The server decides the default domain
  // (burrow.localhost:<port>, for getHost()) once it listens.
  const serverConfig = resolveServerConfig({ ...config.server, stateDir: config.stateDir });
  const logger = pino({ level: config.logLevel });
  const progress = (line: string) => process.stderr.write(`[burrow] ${line}\n`);
  const orchestrator = await LocalOrchestrator.create({
    config: { stateDir: config.stateDir, instance: config.instance, subnet: config.subnet, pool: { template: "base", size: config.poolSize } },
    envd: { ...envdRuntimeFiles(), programs: [codeInterpreterRuntimeFiles(), mcpGatewayRuntimeFiles()] },
    logger: logger.child({ component: "orchestrator" }),
    onProgress: progress,
  });
  // One Prometheus registry for the server's and the bus's metrics, both served on /metrics.
  const registry = new Registry();
  const metrics = createBusMetrics(registry);
  let bus: Bus | undefined;
  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    bus = await createBus(
      config.bus.kind === "embedded"
        ? { kind: "embedded", path: join(config.stateDir, "bus.db"), metrics }
        : { kind: "nats", servers: [...config.bus.servers], metrics },
    );
    server = await startServer(
      serverConfig,
      {
        orchestrator,
        templates: orchestrator.templateBuilder,
        bus,
        registry,
        logger: logger.child({ component: "server" }),
        // Burrow's own MCP server, in-process, calling this server's HTTP APIs with the caller's key.
        mounts: [{ path: "/mcp", handle: createMcpHttpHandler({ onError: (err) => logger.error({ err }, "MCP request failed") }) }],
      },
    );
  } catch (error) {
    // E.g. the port is taken: stop the warm pool and background work so that the process can exit.
    await bus?.close();
    await orchestrator.close();
    throw error;
  }
  const apiKey = server.config.apiKey ?? (await readFile(join(config.stateDir, "api-key"), "utf8")).trim();
  const url = `http://${serverConfig.host === "0.0.0.0" ? "localhost" : serverConfig.host}:${server.port}`;
  process.stdout.write(
    [
      `Burrow is listening on ${url}`,
      "Point the official e2b SDK at it with:",
      `  export E2B_API_URL=${url}`,
      `  export E2B_SANDBOX_URL=${url}`,
      `  export E2B_API_KEY=${apiKey}`,
      ...(server.config.domain ? [`sandbox.getHost(port) is <port>-<sandbox id>.${server.config.domain}`] : []),
      ...(server.caCertFile ? ["For https:// URLs (getHost() as E2B's docs use it), trust the local CA ('burrow ca'):", `  export NODE_EXTRA_CA_CERTS=${server.caCertFile}`] : []),
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
