// The REST API: E2B's control-plane endpoints on fastify. Errors of every kind leave through one handler that
// writes E2B's shape `{"code": <status>, "message": "…"}`.
import type { Server } from "node:http";
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyServerFactory } from "fastify";
import type { Logger } from "pino";
import { toE2bError } from "../errors.js";
import { registerAuth } from "./auth.js";
import { registerTeams } from "../teams/team-services.js";
import { teamResources } from "../teams/team-resources.js";
import type { ApiContext } from "./context.js";
import { registerHealthRoutes } from "./health.js";
import { registerServerStatsRoute } from "./server-stats.js";
import { registerOversizedBodyGuard } from "./oversized-body.js";
import { registerConnectRoutes } from "./sandboxes/connect.js";
import { registerCreateRoutes } from "./sandboxes/create.js";
import { registerGetRoute } from "./sandboxes/get.js";
import { registerNetworkRoutes } from "./sandboxes/network.js";
import { registerKillRoute } from "./sandboxes/kill.js";
import { registerListRoutes } from "./sandboxes/list.js";
import { registerMetricsRoute } from "./sandboxes/metrics.js";
import { registerLogRoutes } from "./sandboxes/logs.js";
import type { SandboxLogs } from "../logs/sandbox-logs.js";
import { registerRestSpans } from "../telemetry/rest-spans.js";
import { registerAlertRoutes } from "../alerts/alert-routes.js";
import type { AlertService } from "../alerts/alert-service.js";
import { registerForkRoute } from "./sandboxes/fork.js";
import { registerPauseRoute } from "./sandboxes/pause.js";
import { registerSnapshotRoutes } from "./sandboxes/snapshots.js";
import { registerTimeoutRoute } from "./sandboxes/timeout.js";
import { registerUnsupportedRoutes, registerUnsupportedTemplateRoutes } from "./sandboxes/unsupported.js";
import { registerTemplateApi, type TemplateBuildService } from "../templates-api/index.js";
import { sharedSchemas } from "./schemas.js";
import { registerTemplateAliasRoute } from "./templates/aliases.js";
import type { Bus, LivenessMonitor } from "@burrow/bus";
import { registerLifecycleStream } from "./sandboxes/lifecycle-stream.js";
import { registerBusApi, type SandboxBusServices } from "../bus-api/index.js";
import { registerCheckpointApi } from "./checkpoints/index.js";
import type { CheckpointLocations } from "./checkpoints/checkpoint-service.js";
import { registerSecretRoutes } from "./secrets/index.js";
import { registerModelRoutes } from "../models/index.js";
import { registerVolumeApi } from "./volumes/index.js";
import { registerClusterRoutes } from "../cluster/cluster-routes.js";
import type { Membership } from "../cluster/membership.js";
import type { CreatePlacement } from "../cluster/create-placement.js";
import type { TemplateSummary } from "@burrow/protocol";
import { registerDrainRoute } from "../cluster/drain-route.js";
import type { SandboxMoves } from "../cluster/sandbox-moves.js";

export interface CreateApiOptions {
  logger: Logger;
  /** Builds the HTTP server fastify listens on; the gateway shares it (one port for API and envd traffic). */
  serverFactory: FastifyServerFactory<Server>;
  /** Template builds (templates-api/); without it those endpoints answer 501 and only alias lookups work. */
  templates?: TemplateBuildService | undefined;
  /** The agent bus behind /burrow/v1; without it those routes do not exist. */
  bus?: Bus | undefined;
  /** The bus's liveness monitor the agent routes answer from (opened on first use without it). */
  liveness?: LivenessMonitor | undefined;
  /** Sandbox watches, triggers and tasks under /burrow/v1 (with a bus only). */
  busServices?: SandboxBusServices | undefined;
  /** Sandboxes' logs (E2B's /sandboxes/{id}/logs and /v2/…); without it those routes answer 501. */
  logs?: SandboxLogs | undefined;
  /** A span per request, continuing callers' W3C trace context (only when the server exports traces). */
  tracing?: boolean | undefined;
  /** Alert webhooks and their delivery log under /burrow/v1/alerts. */
  alerts?: AlertService | undefined;
  /** This node's cluster membership: serves /burrow/v1/nodes (only on a node of a cluster). */
  cluster?: Membership | undefined;
  /** Where creates go on a node of a cluster; without it every create is this server's. */
  placement?: CreatePlacement | undefined;
  /** The cluster's templates this node has not fetched yet, for GET /templates (cluster/cluster-templates.ts). */
  clusterTemplates?: (() => TemplateSummary[]) | undefined;
  /** Sandboxes moved between nodes (cluster/sandbox-moves.ts): drains with `move` and the take-over route. */
  sandboxMoves?: SandboxMoves | undefined;
  /** Where checkpoints are, on a node of a cluster (cluster/checkpoint-records.ts). */
  checkpointRecords?: CheckpointLocations | undefined;
}

export async function createApi(ctx: ApiContext, opts: CreateApiOptions): Promise<FastifyInstance<Server>> {
  const app = Fastify({
    loggerInstance: opts.logger,
    serverFactory: opts.serverFactory,
    bodyLimit: ctx.config.bodyLimitBytes,
    // Sandbox traffic through the gateway is not request-logged either; errors are logged where they happen.
    logController: new LogController({ disableRequestLogging: true }),
    // close() must not wait for long-lived proxied streams (watch, pty) to end on their own.
    forceCloseConnections: true,
    return503OnClosing: true,
    // Router-level failures (a malformed percent-escape, an over-long path parameter) skip the error handler;
    // without this they would answer in fastify's own shape instead of E2B's.
    frameworkErrors: (err, _request, reply) => {
      const { status, body } = toE2bError(err);
      void (reply as FastifyReply).code(status).type("application/json").send(body);
    },
  }) as unknown as FastifyInstance<Server>;

  for (const schema of sharedSchemas) app.addSchema(schema);

  app.setErrorHandler((err, request, reply) => {
    const { status, body, unhandled } = toE2bError(err);
    if (unhandled) request.log.error({ err, method: request.method, url: request.url }, "unhandled API error");
    return reply.code(status).type("application/json").send(body);
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).type("application/json").send({ code: 404, message: `route ${request.method} ${request.url.split("?")[0]} not found` }),
  );

  if (opts.tracing) registerRestSpans(app);
  registerAuth(app, ctx);
  registerTeams(app, ctx.teams, {
    sandboxes: ctx.sandboxes,
    config: () => ctx.config,
    templateSize: (ref) => ctx.orchestrator.resolveTemplate(ref)?.defaults,
    resources: teamResources({
      ownership: ctx.teams.ownership,
      sandboxes: ctx.sandboxes,
      volumes: ctx.volumes,
      orchestrator: ctx.orchestrator,
      templates: opts.templates,
      triggers: opts.busServices?.triggers,
      secrets: ctx.secrets,
      anchorOf: (teamId) => ctx.teams.store.anchorOfTeam(teamId),
    }),
  });
  registerOversizedBodyGuard(app, ctx.config.bodyLimitBytes);
  registerHealthRoutes(app, ctx);
  registerServerStatsRoute(app, { registry: ctx.registry, stateDir: ctx.config.stateDir, clusterNode: opts.cluster?.nodeName });
  registerCreateRoutes(app, ctx, opts.placement);
  registerListRoutes(app, ctx);
  registerGetRoute(app, ctx);
  registerKillRoute(app, ctx);
  registerTimeoutRoute(app, ctx);
  registerConnectRoutes(app, ctx);
  registerPauseRoute(app, ctx);
  registerMetricsRoute(app, ctx);
  registerSnapshotRoutes(app, ctx);
  registerForkRoute(app, ctx);
  registerNetworkRoutes(app, ctx);
  registerSecretRoutes(app, ctx.secrets);
  registerModelRoutes(app, ctx.models);
  registerVolumeApi(app, ctx.volumes);
  registerCheckpointApi(app, ctx, { bus: opts.bus, logger: opts.logger, records: opts.checkpointRecords });
  if (opts.templates) {
    registerTemplateApi(app, {
      builder: opts.templates,
      resolveTemplate: (ref) => ctx.orchestrator.resolveTemplate(ref),
      admission: ctx.sandboxes.buildAdmission,
      clusterTemplates: opts.clusterTemplates,
    });
  } else {
    registerTemplateAliasRoute(app, ctx);
    registerUnsupportedTemplateRoutes(app);
  }
  // The API-key hook registered above already guards these routes.
  if (opts.bus) registerBusApi(app, { bus: opts.bus, authenticate: async () => {}, services: opts.busServices, liveness: opts.liveness });
  if (opts.bus) registerLifecycleStream(app, ctx, opts.bus);
  registerLogRoutes(app, ctx, opts.logs);
  if (opts.alerts) registerAlertRoutes(app, opts.alerts);
  if (opts.cluster) {
    registerClusterRoutes(app, opts.cluster);
    registerDrainRoute(app, opts.cluster, ctx.sandboxes, opts.logger, opts.sandboxMoves);
  }
  registerUnsupportedRoutes(app, ctx);
  await app.ready();
  return app;
}
