// Checkpoint trees under /burrow/v1 (Burrow's own API, beside E2B's): checkpoints of a sandbox's files, its tree,
// rollback in place, branches and deletion. Errors leave through the app's handler in E2B's shape.
import type { FastifyInstance } from "fastify";
import type { Bus } from "@burrow/bus";
import type { Logger } from "pino";
import type { ApiContext } from "../context.js";
import { CheckpointService, type CheckpointLocations } from "./checkpoint-service.js";
import { registerCheckpointRoutes } from "./checkpoint-routes.js";
import { registerSandboxCheckpointRoutes } from "./sandbox-routes.js";

export function registerCheckpointApi(app: FastifyInstance, ctx: ApiContext, opts: { bus?: Bus | undefined; logger: Logger; prefix?: string; records?: CheckpointLocations | undefined }): void {
  const prefix = opts.prefix ?? "/burrow/v1";
  const service = new CheckpointService({ config: ctx.config, orchestrator: ctx.orchestrator, sandboxes: ctx.sandboxes, bus: opts.bus, logger: opts.logger, networks: ctx.networks, records: opts.records });
  registerSandboxCheckpointRoutes(app, service, prefix);
  registerCheckpointRoutes(app, ctx, service, prefix);
}
