// `burrow up`: build what is missing (base template, envd runtime), start the orchestrator and the server,
// print how to connect, and run until SIGINT/SIGTERM. Stopping leaves sandboxes running: the next `up`
// re-adopts them. This is the composition root: the only place that loads the orchestrator, bus and server.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Bus } from "@burrow/bus";
import { defineCommand } from "../command.js";
import { DEFAULT_BUS, DEFAULT_INSTANCE, DEFAULT_POOL_SHELLS, DEFAULT_POOL_SIZE, DEFAULT_STATE_DIR, DEFAULT_SUBNET } from "../config.js";
import type { UpConfig } from "../up-config.js";

export const up = defineCommand({
  name: "up",
  summary: "Start the server (orchestrator, warm pool, bus, API) and run until stopped",
  notes: [
    "Settings without a flag come from the orchestrator's and the server's BURROW_* environment variables",
    "(BURROW_API_KEY, BURROW_IMAGE_DIR, BURROW_MAX_SANDBOXES, …); BURROW_LOG_LEVEL sets the log level (default info).",
    "Stopping (Ctrl-C, SIGTERM) leaves sandboxes running; the next 'burrow up' takes them back.",
  ].join("\n"),
  options: {
    port: { type: "string", value: "PORT", description: "Port of the API and the gateway; 0 picks a free one (default 3000, env BURROW_PORT)" },
    host: { type: "string", value: "HOST", description: "Interface to listen on (default 127.0.0.1, env BURROW_HOST)" },
    "model-gateway-port": { type: "string", value: "PORT", description: "Port of the model gateway (on 127.0.0.1, or BURROW_MODEL_GATEWAY_HOST); 0 picks a free one (default 0, env BURROW_MODEL_GATEWAY_PORT)" },
    domain: { type: "string", value: "DOMAIN", description: "Domain in sandbox responses, for getHost() (default burrow.localhost:PORT where that resolves to loopback, env BURROW_DOMAIN)" },
    "state-dir": { type: "string", value: "DIR", description: `Where everything is kept (default ${DEFAULT_STATE_DIR}, env BURROW_STATE_DIR)` },
    instance: { type: "string", value: "NAME", description: `Keeps instances on one host apart (default ${DEFAULT_INSTANCE}, env BURROW_INSTANCE)` },
    subnet: { type: "string", value: "CIDR", description: `Sandbox addresses (default ${DEFAULT_SUBNET}, env BURROW_SUBNET)` },
    "pool-size": { type: "string", value: "N", description: `Idle sandboxes kept ready; 0 = no pool (default ${DEFAULT_POOL_SIZE}, env BURROW_POOL_SIZE)` },
    "pool-sizes": { type: "string", value: "T=N,…", description: "Idle sandboxes per template, e.g. code-interpreter-v1=2,desktop=0 (env BURROW_POOL_SIZES)" },
    "pool-shells": {
      type: "string",
      value: "N",
      description: `Prepared sandboxes that take the root of any template a create names (default ${DEFAULT_POOL_SHELLS} with a pool, 0 without; env BURROW_POOL_SHELLS)`,
    },
    "memory-pause-max-age-ms": { type: "string", value: "MS", description: "A memory pause older than this becomes a filesystem pause (default 3600000, env BURROW_MEMORY_PAUSE_MAX_AGE_MS)" },
    bus: { type: "string", value: "SPEC", description: `'embedded' or nats://HOST:4222[,…] (default ${DEFAULT_BUS}; with --cluster, the cluster's servers; env BURROW_BUS)` },
    cluster: { type: "string", value: "URLS", description: "Join the cluster coordinated by these NATS JetStream servers, nats://HOST:4222[,…] (env BURROW_CLUSTER)" },
    "node-name": { type: "string", value: "NAME", description: "This node's name in the cluster (default the host name, env BURROW_NODE_NAME)" },
    "node-url": { type: "string", value: "URL", description: "http://HOST:PORT other nodes reach this one at (default the address it listens on, env BURROW_NODE_URL)" },
    "cluster-move-max-mb": {
      type: "string",
      value: "MB",
      description: "A filesystem pause whose writable layer is larger is not published for moves to other nodes (default 10240, env BURROW_CLUSTER_MOVE_MAX_MB)",
    },
  },
  async run({ values, env }) {
    // Loaded here, not at the top: it imports the orchestrator and the server, which `burrow --help` does not need.
    const { resolveUpConfig } = await import("../up-config.js");
    const config = resolveUpConfig(
      {
        stateDir: values["state-dir"],
        instance: values.instance,
        subnet: values.subnet,
        poolSize: values["pool-size"],
        poolSizes: values["pool-sizes"],
        poolShells: values["pool-shells"],
        memoryPauseMaxAgeMs: values["memory-pause-max-age-ms"],
        bus: values.bus,
        host: values.host,
        port: values.port,
        domain: values.domain,
        modelGatewayPort: values["model-gateway-port"],
        cluster: values.cluster,
        nodeName: values["node-name"],
        nodeUrl: values["node-url"],
        clusterMoveMaxMb: values["cluster-move-max-mb"],
      },
      env,
    );
    await runServer(config);
  },
});

async function runServer(config: UpConfig): Promise<void> {
  const [{ envdRuntimeFiles }, { codeInterpreterRuntimeFiles }, { mcpGatewayRuntimeFiles }, { createMcpHttpHandler }, { createDashboardHandler }, { LocalOrchestrator }, { createBus, createBusMetrics }, { startServer }, { pino }, { Registry }] =
    await Promise.all([
      import("@burrow/envd"),
      import("@burrow/code-interpreter/runtime-files"),
      import("@burrow/mcp/gateway-runtime-files"),
      import("@burrow/mcp"),
      import("@burrow/dashboard"),
      import("@burrow/orchestrator"),
      import("@burrow/bus"),
      import("@burrow/server"),
      import("pino"),
      import("prom-client"),
    ]);
  const { stateDir } = config.orchestrator;
  const logger = pino({ level: config.logLevel });
  const progress = (line: string) => process.stderr.write(`[burrow] ${line}\n`);
  if (config.server.cluster && config.bus.kind === "embedded") {
    logger.warn(
      { node: config.server.cluster.nodeName },
      "--bus embedded on a node of a cluster: this node's bus is its own (events, triggers, queues and agents published through it are not heard on other nodes)",
    );
  }
  const orchestrator = await LocalOrchestrator.create({
    config: config.orchestrator,
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
        ? { kind: "embedded", path: join(stateDir, "bus.db"), metrics }
        : { kind: "nats", servers: [...config.bus.servers], metrics, ...(config.server.cluster ? { replicas: config.server.cluster.replicas } : {}) },
    );
    server = await startServer(
      config.server,
      {
        orchestrator,
        templates: orchestrator.templateBuilder,
        templateStore: orchestrator.templateBuilder.store,
        bus,
        registry,
        logger: logger.child({ component: "server" }),
        // Burrow's own MCP server, in-process, calling this server's HTTP APIs with the caller's key.
        // The web dashboard's files (public: the page signs in with a key it then sends on every API call).
        mounts: [
          { path: "/mcp", handle: createMcpHttpHandler({ onError: (err) => logger.error({ err }, "MCP request failed") }) },
          { path: "/dashboard", public: true, handle: createDashboardHandler({ prefix: "/dashboard" }) },
        ],
      },
    );
  } catch (error) {
    // E.g. the port is taken: stop the warm pool and background work so that the process can exit.
    await bus?.close();
    await orchestrator.close();
    throw error;
  }
  const apiKey = server.config.apiKey ?? (await readFile(join(stateDir, "api-key"), "utf8")).trim();
  const url = `http://${config.server.host === "0.0.0.0" ? "localhost" : config.server.host}:${server.port}`;
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
