// startServer: the control plane in one call — store, lifecycle, REST API and gateway on one port.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { join } from "node:path";
import type { Orchestrator } from "@burrow/orchestrator";
import { pino, type Logger } from "pino";
import { Registry } from "prom-client";
import { createApi } from "./api/app.js";
import { ensureApiKey, type EnsureApiKeyResult } from "./auth/ensure-api-key.js";
import { resolveServerConfig, type ServerConfig, type ServerConfigInput } from "./config.js";
import { ClientConnectionCap } from "./gateway/client-connection-cap.js";
import { Gateway, defaultUpstream, type UpstreamResolver } from "./gateway/gateway.js";
import type { TemplateBuildService } from "./templates-api/index.js";
import { SandboxEvents } from "./lifecycle/events.js";
import { SandboxService } from "./lifecycle/sandbox-service.js";
import { createServerMetrics } from "./metrics/prometheus.js";
import { SandboxMetrics } from "./metrics/sandbox-metrics.js";
import { openStore, type Store } from "./store/store.js";
import { VolumeService } from "./volumes/volume-service.js";
import { freshSandboxAdmission, type FreshSandboxAdmission } from "./teams/fresh-sandbox-quota.js";
import { openSecrets } from "./secrets/index.js";
import { ModelGateway } from "./models/index.js";
import { egressCaFor, startHeaderTransforms } from "./network/egress-interceptor.js";
import { startEgressUpstreams } from "./network/egress-proxy-config.js";
import { pruneNetworkCopies } from "./network/network-copies.js";
import { ensureSandboxEventStream, LivenessMonitor, type Bus } from "@burrow/bus";
import { publishLifecycleEvents } from "./bus/lifecycle-publisher.js";
import { publishEgressEvents } from "./egress/egress-publisher.js";
import { ServerSandboxRunner } from "./bus/sandbox-runner.js";
import { TriggerService } from "./bus/trigger-service.js";
import { WatchBridge } from "./bus/watch-bridge.js";
import type { SandboxBusServices } from "./bus-api/index.js";
import { createMountDispatcher, type HttpMount } from "./http-mounts.js";
import type { ApiContext } from "./api/context.js";
import { resolveDomain } from "./local-domain.js";
import { acceptTlsOnSamePort, prepareServerTls } from "./tls/index.js";
import { SandboxLogs } from "./logs/sandbox-logs.js";
import { observeOrchestrator } from "./telemetry/observed-orchestrator.js";
import { SandboxGauges } from "./metrics/sandbox-gauges.js";
import { registerPoolGauge } from "./metrics/pool-gauge.js";
import { registerStateGauges } from "./metrics/state-gauges.js";
import { startTracing } from "./telemetry/tracing.js";
import { AlertService } from "./alerts/alert-service.js";
import { WebhookStore } from "./alerts/webhook-store.js";
import { startAlertWatches } from "./alerts/alert-watches.js";
import { openTeamServices } from "./teams/team-services.js";
import { ClusterNode } from "./cluster/cluster-node.js";
import type { CreatePlacement } from "./cluster/create-placement.js";
import { taskNodes } from "./cluster/task-nodes.js";
import { CheckpointRecords } from "./cluster/checkpoint-records.js";
import type { LocalTemplates } from "./cluster/cluster-templates.js";
import { clusterTemplateTeams } from "./cluster/template-teams.js";
import type { SandboxMoves } from "./cluster/sandbox-moves.js";
import { PUBLIC_TEMPLATE_NAMES } from "./teams/ownership.js";

export interface ServerDeps {
  orchestrator: Orchestrator;
  /** @default pino at level `info` */
  logger?: Logger;
  /** Aborting it closes the server (like calling close()). */
  signal?: AbortSignal;
  /** Prometheus registry for the server's metrics. @default a fresh Registry (never the global one) */
  registry?: Registry;
  /** Where sandbox ports are reachable. @default the sandbox's address, same port */
  upstream?: UpstreamResolver;
  /** Template builder behind E2B's Template API; without it template builds answer 501. */
  templates?: TemplateBuildService;
  /** The orchestrator's manifests and layers: on a node of a cluster they are shared (cluster/cluster-templates.ts). */
  templateStore?: LocalTemplates;
  /**
   * The agent bus: serves /burrow/v1 (publish, subscribe, queues, agents) and receives sandbox lifecycle events.
   * The caller owns it (creates and closes it).
   */
  bus?: Bus;
  /** Endpoints other packages serve on this port behind the API key (Burrow's MCP server at /mcp). */
  mounts?: readonly HttpMount[];
}

export interface RunningServer {
  /** Base URL for clients, e.g. `http://127.0.0.1:3000` (E2B_API_URL and E2B_SANDBOX_URL alike). */
  readonly url: string;
  readonly port: number;
  /** The resolved config, with `domain` as the API returns it (the automatic one decided). */
  readonly config: ServerConfig;
  /** HTTPS is served on the same port with a certificate from the CA in this file; null when it is not. */
  readonly caCertFile: string | null;
  readonly store: Store;
  readonly sandboxes: SandboxService;
  /** Lifecycle events (created, paused, resumed, killed, timed_out) for the bus and other observers. */
  readonly events: SandboxEvents;
  readonly gateway: Gateway;
  readonly registry: Registry;
  /** What ensureApiKey did at start: the plaintext key when one was created or registered now. */
  readonly apiKey: EnsureApiKeyResult;
  /** Stop listening, drop proxied connections, close the store. Sandboxes keep running. Idempotent. */
  close(): Promise<void>;
}

/**
 * How often Node looks for requests past their header or request timeout: a quarter of the shorter one, so that a
 * timeout is enforced within 25 % of its value, but no more often than every 100 ms nor less than every 30 s.
 */
function connectionsCheckingInterval(headersTimeoutMs: number, requestTimeoutMs: number): number {
  const shortest = requestTimeoutMs > 0 ? Math.min(headersTimeoutMs, requestTimeoutMs) : headersTimeoutMs;
  return Math.min(30_000, Math.max(100, Math.floor(shortest / 4)));
}

export async function startServer(config: ServerConfigInput, deps: ServerDeps): Promise<RunningServer> {
  const cfg = resolveServerConfig(config);
  const logger = deps.logger ?? pino({ name: "burrow-server" });
  const registry = deps.registry ?? new Registry();
  const store = openStore(cfg.stateDir);
  const cleanups: Array<() => void | Promise<void>> = [() => store.close()];
  const runCleanups = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) {
      try {
        await cleanup();
      } catch (err) {
        logger.error({ err }, "error while closing server");
      }
    }
  };

  try {
    const apiKey = ensureApiKey(store.apiKeys, cfg.stateDir, cfg.apiKey);
    if (apiKey.keyFile && apiKey.created) logger.info({ keyFile: apiKey.keyFile }, "generated API key");

    // A node of a cluster records its sandboxes' ownership from their create on, so it joins NATS first.
    // The team a lifecycle event of this node's names on a cluster's shared bus; set once the teams are open.
    let lifecycleTeamOf: ((sandboxId: string) => string | null | undefined) | undefined;
    const cluster = cfg.cluster
      ? await ClusterNode.open(cfg.cluster, {
          logger,
          runningSandboxes: () => store.sandboxes.countRunning(),
          poolFill: () => deps.orchestrator.poolFill?.() ?? [],
          capacity: cfg.admission.maxSandboxes,
          templates: () => deps.orchestrator.listTemplates().flatMap((t) => [t.templateId, ...t.aliases]),
          committedVcpu: () => store.sandboxes.list().reduce((sum, row) => sum + (row.state === "running" ? row.cpuCount : 0), 0),
        })
      : undefined;
    if (cluster) cleanups.push(() => cluster.close());
    const events = new SandboxEvents(logger);
    if (deps.bus) {
      await ensureSandboxEventStream(deps.bus, cfg.eventStream);
      cleanups.push(publishLifecycleEvents(events, deps.bus, logger, cfg.cluster ? (sandboxId) => lifecycleTeamOf?.(sandboxId) : undefined));
      cleanups.push(publishEgressEvents(deps.orchestrator, deps.bus, logger));
    }
    const metrics = createServerMetrics(registry, () => store.sandboxes.countRunning());
    if (cfg.otlpEndpoint) {
      const tracing = startTracing({ endpoint: cfg.otlpEndpoint, serviceName: "burrow-server", logger });
      cleanups.push(() => tracing.close());
    }
    const alerts = new AlertService({
      webhooks: new WebhookStore(cfg.stateDir),
      logger,
      bus: deps.bus,
      sandboxInfo: (sandboxId) => {
        const row = store.sandboxes.get(sandboxId);
        return row ? { teamId: teams.ownership.teamOfSandbox(row), templateId: row.templateId } : undefined;
      },
      volumeTeam: (volumeId) => store.volumes.get(volumeId)?.teamId,
    });
    cleanups.push(() => alerts.close());
    // One liveness monitor for the agent routes and heartbeat_lost alerts.
    const liveness = deps.bus ? await LivenessMonitor.open(deps.bus) : undefined;
    if (liveness) cleanups.push(() => liveness.close());
    const alertWatches = startAlertWatches({
      alerts,
      logger,
      events,
      bus: deps.bus,
      liveness,
      teams: () => ({ defaultTeamId: teams.defaultTeamId, list: () => teams.store.teams() }),
      teamOfSandbox: (sandboxId) => {
        const row = store.sandboxes.get(sandboxId);
        return row ? teams.ownership.teamOfSandbox(row) : undefined;
      },
    });
    cleanups.push(() => alertWatches.close());
    const logs = new SandboxLogs({
      orchestrator: deps.orchestrator,
      limits: cfg.sandboxLogs,
      liveIds: () => store.sandboxes.list().map((row) => row.sandboxId),
      ownerOf: (sandboxId) => {
        const row = store.sandboxes.get(sandboxId);
        return row ? teams.ownership.teamOfSandbox(row) : undefined;
      },
      logger,
      onEntry: (sandboxId, entry) => alerts.onLogEntry(sandboxId, entry),
    });
    cleanups.push(() => logs.close());
    registerStateGauges(registry, store.sandboxes, deps.templates);
    registerPoolGauge(registry, deps.orchestrator);
    const sandboxMetrics = new SandboxMetrics(deps.orchestrator, {
      intervalMs: cfg.metricsIntervalMs,
      retention: cfg.metricsRetention,
      gauges: new SandboxGauges(registry, (sandboxId) => store.sandboxes.get(sandboxId)?.templateId),
      onSample: (sandboxId, sample) => alerts.onSample(sandboxId, sample),
      logger,
    });
    cleanups.push(() => sandboxMetrics.close());
    const sandboxes = new SandboxService({
      config: cfg,
      store: store.sandboxes,
      orchestrator: observeOrchestrator(cluster ? cluster.owning(deps.orchestrator) : deps.orchestrator, { logs, metrics, onCreated: (record) => alertWatches.onCreated(record) }),
      events,
      metrics,
      sandboxMetrics,
      logger,
      networks: store.networks,
      snapshotAnchorKey: (keyId) => teams.store.teamAnchorKey(keyId),
    });
    cleanups.push(() => sandboxes.close());
    cleanups.push(sandboxes.onRemoved((sandboxId) => (alerts.forget(sandboxId), alertWatches.forget(sandboxId))));
    await sandboxes.reconcile();
    await cluster?.syncOwnership(() => store.sandboxes.list().map((row) => row.sandboxId), events, {
      get: (sandboxId) => store.sandboxes.get(sandboxId),
      // Another node owns the id: this copy must not live on beside it.
      kill: (sandboxId) => sandboxes.kill(sandboxId, "orchestrator"),
    });

    // With a bus: fs watches, and triggers and tasks run by a real runner (rules resume from the bus's KV).
    let busServices: SandboxBusServices | undefined;
    // Fresh sandboxes of triggers and tasks are admitted against their team's quotas once the teams are open (below).
    let freshAdmission: FreshSandboxAdmission | undefined;
    // Set once made (below): where a trigger's fresh sandbox goes on a node of a cluster.
    let placement: CreatePlacement | undefined;
    if (deps.bus) {
      const upstream = deps.upstream ?? defaultUpstream;
      // Nodes sharing one bus share its task queue: a run belongs to the node with its sandbox (cluster/task-nodes.ts).
      const sharedBus = cluster && deps.bus.kind === "nats" ? cluster : undefined;
      const nodeFor = sharedBus
        ? taskNodes({ membership: sharedBus.membership, owners: sharedBus.owners, isLocal: (sandboxId) => store.sandboxes.get(sandboxId) !== undefined, placement: () => placement })
        : undefined;
      const runner = new ServerSandboxRunner({ sandboxes, upstream, bus: deps.bus, logger, outputLimits: cfg.outputEvents, admitFresh: () => freshAdmission, nodeFor });
      const watches = new WatchBridge({ bus: deps.bus, sandboxes, upstream, events, logger, limits: cfg.fsEvents });
      cleanups.push(() => watches.close());
      const triggers = await TriggerService.open({ bus: deps.bus, runner, logger, eventStream: cfg.eventStream, node: sharedBus?.config.nodeName });
      cleanups.push(() => triggers.close());
      busServices = { watches, triggers, runner };
    }

    const gateway = new Gateway({
      sandboxes,
      metrics,
      logger,
      ingress: (sandboxId) => store.networks.get(sandboxId),
      ...(deps.upstream ? { upstream: deps.upstream } : {}),
    });
    cleanups.push(() => gateway.close());
    // Requests for sandboxes another node has go there (cluster/forwarder.ts); the rest are this node's.
    const forwarder = cluster?.forwarder(
      (sandboxId) => store.sandboxes.get(sandboxId) !== undefined,
      (key) => store.apiKeys.verify(key) !== undefined,
    );
    // Routes naming a checkpoint go to the node holding it (cluster/checkpoint-records.ts).
    const checkpointRecords = cfg.cluster ? await CheckpointRecords.open({ ...cfg.cluster, logger }) : undefined;
    if (checkpointRecords) {
      cleanups.push(() => checkpointRecords.close());
      forwarder?.routeCheckpoints(checkpointRecords);
    }

    const secrets = openSecrets(cfg.stateDir, store.secrets);
    // The CA sandboxes trust for TLS Burrow terminates: header transforms and the model gateway's provider hosts.
    const egressCa = await egressCaFor(deps.orchestrator, cfg.stateDir, deps.signal);
    const models = new ModelGateway({ store: store.models, secrets, apiKeys: store.apiKeys, sandboxes, orchestrator: deps.orchestrator, logger, certificates: egressCa });
    cleanups.push(() => models.close());
    await models.listen(cfg.modelGateway);
    await models.serveSandboxes(deps.signal);
    cleanups.push(await startHeaderTransforms(deps.orchestrator, { cfg, networks: store.networks, secrets, signal: deps.signal, ca: egressCa }));
    cleanups.push(startEgressUpstreams(deps.orchestrator, store.networks));
    const pruned = await pruneNetworkCopies(deps.orchestrator, store.networks, deps.signal);
    if (pruned > 0) logger.info({ pruned }, "dropped the egress kept for deleted snapshots and checkpoints");

    const domainForPort = await resolveDomain(cfg, logger);
    const tls = await prepareServerTls(cfg, logger, deps.signal);
    let serverUrl = "";
    const mounts = createMountDispatcher(deps.mounts ?? [], {
      verifyApiKey: (key) => store.apiKeys.verify(key) !== undefined,
      serverUrl: () => serverUrl,
    });
    let moves: SandboxMoves | undefined;
    const connectionCap = new ClientConnectionCap(cfg.maxConnectionsPerClient, logger);
    const serverFactory = (apiHandler: (req: IncomingMessage, res: ServerResponse) => void): Server => {
      const server = createServer(
        {
          headersTimeout: cfg.headersTimeoutMs,
          // Generous by default: uploads through the gateway may take longer than Node's 5 minutes.
          requestTimeout: cfg.requestTimeoutMs,
          keepAliveTimeout: cfg.keepAliveTimeoutMs,
          connectionsCheckingInterval: connectionsCheckingInterval(cfg.headersTimeoutMs, cfg.requestTimeoutMs),
        },
        (req, res) => {
          if (connectionCap.isRefused(req.socket)) {
            req.socket.destroy();
            return;
          }
          const local = () => {
            if (gateway.handleRequest(req, res)) return;
            // The idle timeout is for clients that go quiet. Once an API request is complete, what remains is the
            // server's own work (a create may wait minutes for a template's first build): no idle limit until it
            // answers; keep-alive idleness after the answer is keepAliveTimeoutMs's business.
            const hasBody = req.headers["content-length"] !== undefined || req.headers["transfer-encoding"] !== undefined;
            if (!hasBody) req.socket.setTimeout(0);
            else req.once("end", () => req.socket.setTimeout(0));
            if (!mounts.handle(req, res)) apiHandler(req, res);
          };
          const forward = () => {
            if (!forwarder?.handleRequest(req, res, local)) local();
          };
          // A resume of a movable sandbox of a lost or drained node is taken over here first (cluster/sandbox-moves.ts).
          if (!moves?.handleRequest(req, res, forward)) forward();
        },
      );
      // Node destroys a socket idle this long unless the exchange on it listens for 'timeout' (the gateway does
      // once a sandbox streams its answer, see proxy-http.ts).
      server.setTimeout(cfg.idleTimeoutMs);
      // With HTTPS on the port, connections are counted as they are accepted, before their first byte or handshake.
      const admit = (socket: Socket) => connectionCap.admit(socket);
      if (!tls) server.on("connection", admit);
      server.on("upgrade", (req: IncomingMessage, socket, head: Buffer) => {
        const local = () => gateway.handleUpgrade(req, socket, head);
        if (!forwarder?.handleUpgrade(req, socket, head, local)) local();
      });
      if (tls) acceptTlsOnSamePort(server, { ...tls, admit });
      return server;
    };
    const teams = openTeamServices({
      db: store.db,
      sandboxStore: store.sandboxes,
      resolveTemplate: (ref) => deps.orchestrator.resolveTemplate(ref),
      quotaDefaults: cfg.teamQuotas,
      bus: deps.bus,
      logger,
      configuredKey: cfg.apiKey,
      createdKey: apiKey.created,
      buildStatus: deps.templates ? (templateId, buildId) => buildStatusOf(deps.templates!, templateId, buildId) : undefined,
      volumes: () => store.volumes.list(),
      usageElsewhere: cluster ? () => cluster.teamUsageElsewhere() : undefined,
      ledger: cluster?.teamLedger(),
    });
    cleanups.push(() => teams.close());
    lifecycleTeamOf = (sandboxId) => {
      const row = store.sandboxes.get(sandboxId);
      const team = row ? teams.ownership.teamOfSandbox(row) : undefined;
      return team === undefined ? undefined : team === teams.defaultTeamId ? null : team;
    };
    // Teams and keys made on any node are known here, and authenticate locally (cluster/team-sync.ts).
    // Other nodes count this node's sandboxes against their teams' quotas and send their `lost` events to their team.
    cluster?.describeSandboxes(events, () => store.sandboxes.list().map((row) => row.sandboxId), (sandboxId) => {
      const row = store.sandboxes.get(sandboxId);
      if (!row) return undefined;
      const team = teams.ownership.teamOfSandbox(row);
      return { teamId: team === teams.defaultTeamId ? null : team, vcpu: row.cpuCount, memoryMB: row.memoryMB, paused: row.state !== "running", diskMB: row.diskSizeMB };
    });
    await cluster?.syncTeams({ store: teams.store, defaultTeamId: teams.defaultTeamId, onRevoked: (keyId) => teams.streams.endAll(keyId) });
    freshAdmission = freshSandboxAdmission(teams, (ref) => deps.orchestrator.resolveTemplate(ref)?.defaults);
    const volumes = new VolumeService({
      store: store.volumes,
      orchestrator: deps.orchestrator,
      stateDir: cfg.stateDir,
      defaultSizeMB: cfg.volumeDefaultMB,
      teamOfKey: (id) => teams.ownership.teamOfKeyId(id),
      defaultTeamId: teams.defaultTeamId,
    });
    const apiContext: ApiContext = { config: cfg, sandboxes, sandboxMetrics, orchestrator: deps.orchestrator, apiKeys: store.apiKeys, networks: store.networks, secrets, models, registry, teams, volumes };
    // Templates and snapshots made on any node are started on any node (cluster/cluster-templates.ts).
    const shared = cluster && deps.templateStore
      ? await cluster.shareTemplates({
          local: deps.templateStore,
          teams: clusterTemplateTeams(teams.ownership, teams.defaultTeamId),
          deleteLocal: async (templateId) => (await deps.templates?.deleteTemplate(templateId)) ?? false,
          shipped: PUBLIC_TEMPLATE_NAMES,
        })
      : undefined;
    // Filesystem pauses can be resumed on another node, and drains can move sandboxes (cluster/sandbox-moves.ts).
    moves = cluster && shared
      ? await cluster.moveSandboxes(
          {
            workDir: join(cfg.stateDir, "sandbox-archives"),
            host: {
              orchestrator: deps.orchestrator,
              clientId: () => cfg.clientId,
              ids: () => store.sandboxes.list().map((row) => row.sandboxId),
              row: (sandboxId) => store.sandboxes.get(sandboxId),
              network: (sandboxId) => store.networks.get(sandboxId),
              teamOf: (row) => {
                const team = teams.ownership.teamOfSandbox(row);
                return { teamId: team === teams.defaultTeamId ? null : team, apiKeyPublicId: row.apiKeyId !== null ? (teams.store.keyById(row.apiKeyId)?.publicId ?? null) : null };
              },
              keyIdOf: (publicId) => teams.store.keyByPublicId(publicId)?.id,
              caller: (key) => {
                const info = store.apiKeys.verify(key);
                if (!info) return undefined;
                const team = teams.ownership.teamOfKeyId(info.id);
                return { teamId: team === teams.defaultTeamId ? null : team, keyId: info.id };
              },
              adopt: (row, move, start) => sandboxes.adoptMoved(row, move, start),
            },
          },
          events,
        )
      : undefined;
    // Creates go to the node placement chooses (cluster/create-placement.ts).
    placement = cluster?.placement({
      runningSandboxes: () => store.sandboxes.countRunning(),
      poolFill: () => deps.orchestrator.poolFill?.() ?? [],
      resolveTemplate: (ref) => deps.orchestrator.resolveTemplate(ref),
      capacity: cfg.admission.maxSandboxes,
    });
    const app = await createApi(apiContext, { logger, serverFactory, templates: deps.templates, bus: deps.bus, busServices, logs, tracing: cfg.otlpEndpoint !== null, alerts, liveness, cluster: cluster?.membership, placement, clusterTemplates: shared ? () => shared.summaries() : undefined, sandboxMoves: moves,
      checkpointRecords: checkpointRecords && {
        taken: (checkpointId, sandboxId) => {
          const row = store.sandboxes.get(sandboxId);
          const teamId = row ? teams.ownership.teamOfSandbox(row) : null;
          return checkpointRecords.taken(checkpointId, sandboxId, teamId === teams.defaultTeamId ? null : teamId);
        },
        deleted: (checkpointId) => checkpointRecords.deleted(checkpointId),
      },
    });
    // The default domain names the port, known once listening (port 0 picks one) and before any request arrives;
    // handlers read the config per request.
    let servedConfig = cfg;
    app.server.once("listening", () => {
      const address = app.server.address();
      const port = typeof address === "object" && address ? address.port : cfg.port;
      servedConfig = apiContext.config = Object.freeze({ ...cfg, domain: domainForPort(port) });
    });
    // The gateway goes first: upgraded (WebSocket) sockets are invisible to fastify's close and would hold it open.
    cleanups.push(async () => {
      gateway.close();
      await app.close();
    });
    await app.listen({ host: cfg.host, port: cfg.port });
    sandboxMetrics.start();
    logs.start();

    const address = app.server.address();
    const port = typeof address === "object" && address ? address.port : cfg.port;
    const urlHost = cfg.host === "0.0.0.0" || cfg.host === "::" ? "127.0.0.1" : cfg.host.includes(":") ? `[${cfg.host}]` : cfg.host;
    serverUrl = `http://${urlHost}:${port}`;
    logger.info({ host: cfg.host, port }, "burrow server listening");
    await cluster?.join(serverUrl);

    let closing: Promise<void> | undefined;
    const close = () => (closing ??= runCleanups());
    deps.signal?.addEventListener("abort", () => void close(), { once: true });
    if (deps.signal?.aborted) await close();

    return {
      url: serverUrl,
      port,
      config: servedConfig,
      caCertFile: tls?.caCertFile ?? null,
      store,
      sandboxes,
      events,
      gateway,
      registry,
      apiKey,
      close,
    };
  } catch (err) {
    await runCleanups();
    throw err;
  }
}

/** A build's status, or undefined when the builder no longer knows it (it ended long ago). */
function buildStatusOf(templates: TemplateBuildService, templateId: string, buildId: string): string | undefined {
  try {
    return templates.status(templateId, buildId, 0).status;
  } catch {
    return undefined;
  }
}
