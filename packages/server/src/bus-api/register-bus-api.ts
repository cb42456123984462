// Burrow's bus over HTTP under /burrow/v1: publish, subscribe (server-sent events), queues (and their depth and dead
// letters), agent keys and heartbeats.
// Errors leave through the app's error handler as `{"code": <status>, "message": "…"}`.
import type { FastifyInstance, FastifyRequest } from "fastify";
import { BusKeyRegistry, LivenessMonitor, type Bus, type KeyRegistry } from "@burrow/bus";
import { registerAgentRoutes } from "./agent-routes.js";
import { registerPublishRoutes } from "./publish-routes.js";
import { registerQueueAdminRoutes } from "./queue-admin-routes.js";
import { QueueGateway, registerQueueRoutes, type QueueApiDefaults } from "./queue-routes.js";
import { registerTriggerRoutes, type SandboxBusServices } from "./trigger-routes.js";

export interface BusApiOptions {
  bus: Bus;
  /** Runs before every route; throw (e.g. a BurrowError with Code.Unauthenticated) to refuse. */
  authenticate(request: FastifyRequest): Promise<void>;
  /** Where agent public keys live. @default a BusKeyRegistry on `bus` */
  registry?: KeyRegistry;
  /** Heartbeat window for agents' up/down state. @default 5000 */
  livenessWindowMs?: number;
  /** The monitor to answer from (the server's, which alerts also follow); without it one is opened on first use. */
  liveness?: LivenessMonitor | undefined;
  queueDefaults?: QueueApiDefaults;
  /** @default "/burrow/v1" */
  prefix?: string;
  /** Sandbox watches, triggers and tasks; without them those routes do not exist. */
  services?: SandboxBusServices | undefined;
}

export function registerBusApi(app: FastifyInstance, opts: BusApiOptions): void {
  const prefix = opts.prefix ?? "/burrow/v1";
  const auth = (r: FastifyRequest) => opts.authenticate(r);
  let registry: Promise<KeyRegistry> | undefined = opts.registry ? Promise.resolve(opts.registry) : undefined;
  // A monitor given by the caller is the caller's to close.
  let monitor: Promise<LivenessMonitor> | undefined;
  const given = opts.liveness;
  const gateway = new QueueGateway(opts.bus, opts.queueDefaults ?? {});
  registerPublishRoutes(app, opts.bus, prefix, auth);
  registerQueueRoutes(app, gateway, prefix, auth);
  registerQueueAdminRoutes(app, opts.bus, prefix, auth);
  registerAgentRoutes(
    app,
    opts.bus,
    () => (registry ??= BusKeyRegistry.open(opts.bus)),
    () => (given ? Promise.resolve(given) : (monitor ??= LivenessMonitor.open(opts.bus, { windowMs: opts.livenessWindowMs ?? 5000 }))),
    prefix,
    auth,
  );
  if (opts.services) registerTriggerRoutes(app, opts.services, prefix, auth);
  app.addHook("onClose", async () => {
    await gateway.close();
    if (monitor) await (await monitor).close();
  });
}
