// Sandbox watches, triggers and tasks over HTTP under /burrow/v1.
//   POST   /sandboxes/:id/watches {path, recursive?, user?}  → 201 {watchId, …}   (fs events on the bus)
//   GET    /sandboxes/:id/watches                            → 200 [watch]
//   DELETE /sandboxes/:id/watches/:watchId                   → 204
//   POST   /triggers {id?, on, in, cmd|code, …}              → 201 trigger
//   GET    /triggers, GET /triggers/:id, DELETE /triggers/:id
//   POST   /tasks {target, cmd|code, process?, terminal?, category?, maxAttempts?, …} → 201 {id, duplicate}
//   GET    /tasks/:id[?waitMs=…]                             → 200 status (waits for a final state up to waitMs)
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { TaskStatus } from "@burrow/bus";
import { BurrowError, Code } from "@burrow/protocol";
import type { ServerSandboxRunner } from "../bus/sandbox-runner.js";
import type { StoredTrigger, TriggerService } from "../bus/trigger-service.js";
import type { WatchBridge } from "../bus/watch-bridge.js";
import { namedSandboxes, parseTaskSpec, parseTriggerRule } from "./run-spec-validation.js";

/** What the server adds to the bus API when it runs sandboxes: fs watches, triggers and tasks. */
export interface SandboxBusServices {
  watches: WatchBridge;
  triggers: TriggerService;
  runner: ServerSandboxRunner;
}

const sandboxParams = { type: "object", required: ["sandboxId"], properties: { sandboxId: { type: "string", maxLength: 128 } } } as const;
const triggerParams = { type: "object", required: ["id"], properties: { id: { type: "string", maxLength: 64 } } } as const;
const taskParams = { type: "object", required: ["id"], properties: { id: { type: "string", maxLength: 256 } } } as const;

/** A rule as answered: without the key that made it (the server's own record). */
const TAIL = 2000;
const tail = (s: string) => (s.length > TAIL ? s.slice(-TAIL) : s);

function runShown(t: TaskStatus) {
  const labels = t.spec.labels ?? {};
  return {
    id: t.id,
    state: t.state,
    attempt: t.attempt,
    updatedAt: new Date(t.updatedAtMs).toISOString(),
    event: { type: labels["event"] ?? null, sandboxId: labels["sandboxId"] ?? null, path: labels["path"] ?? null },
    result: t.result ? { exitCode: t.result.exitCode, sandboxId: t.result.sandboxId ?? null, stdout: tail(t.result.stdout), stderr: tail(t.result.stderr) } : null,
    error: t.error ?? null,
  };
}

function shown(t: StoredTrigger): Omit<StoredTrigger, "ownerKeyId"> {
  const { ownerKeyId: _owner, ...rest } = t;
  return rest;
}

export function registerTriggerRoutes(app: FastifyInstance, s: SandboxBusServices, prefix: string, auth: (r: FastifyRequest) => Promise<void>): void {
  const requireSandbox = (id: string) => void s.runner.target(id);

  app.post<{ Params: { sandboxId: string }; Body: unknown }>(`${prefix}/sandboxes/:sandboxId/watches`, { onRequest: auth, schema: { params: sandboxParams } }, async (req, reply) => {
    const b = req.body;
    if (typeof b !== "object" || b === null || Array.isArray(b)) throw new BurrowError(Code.InvalidArgument, "body must be an object {path, recursive?, user?}");
    const { path, recursive, user, ...rest } = b as Record<string, unknown>;
    if (Object.keys(rest).length) throw new BurrowError(Code.InvalidArgument, `${Object.keys(rest)[0]} is not a known field`);
    if (typeof path !== "string" || !path.startsWith("/") || path.length > 4096) throw new BurrowError(Code.InvalidArgument, "path must be an absolute path");
    if (recursive !== undefined && typeof recursive !== "boolean") throw new BurrowError(Code.InvalidArgument, "recursive must be a boolean");
    if (user !== undefined && (typeof user !== "string" || !/^[a-z_][a-z0-9_-]{0,63}$/.test(user))) throw new BurrowError(Code.InvalidArgument, "user must be a user name");
    requireSandbox(req.params.sandboxId);
    const w = await s.watches.start(req.params.sandboxId, { path, recursive: recursive ?? false, user: user as string | undefined });
    return reply.code(201).send(w);
  });

  app.get<{ Params: { sandboxId: string } }>(`${prefix}/sandboxes/:sandboxId/watches`, { onRequest: auth, schema: { params: sandboxParams } }, async (req) => {
    requireSandbox(req.params.sandboxId);
    return s.watches.list(req.params.sandboxId);
  });

  app.delete<{ Params: { sandboxId: string; watchId: string } }>(`${prefix}/sandboxes/:sandboxId/watches/:watchId`, {
    onRequest: auth,
    schema: { params: { type: "object", required: ["sandboxId", "watchId"], properties: { sandboxId: sandboxParams.properties.sandboxId, watchId: { type: "string", maxLength: 64 } } } },
  }, async (req, reply) => {
    if (!s.watches.stop(req.params.sandboxId, req.params.watchId)) throw new BurrowError(Code.NotFound, `watch "${req.params.watchId}" not found on sandbox "${req.params.sandboxId}"`);
    return reply.code(204).send();
  });

  app.post<{ Body: unknown }>(`${prefix}/triggers`, { onRequest: auth }, async (req, reply) => {
    const rule = parseTriggerRule(req.body);
    for (const id of namedSandboxes(rule)) requireSandbox(id);
    // Code in a sandbox known now (named, or the only source the rule listens to) is refused at once without an execution server.
    const codeIn = rule.in === "source" ? rule.on.sandboxId : "sandboxId" in rule.in ? rule.in.sandboxId : undefined;
    if (rule.code && codeIn !== undefined) await s.runner.requireExecutionServer(codeIn);
    const t = await s.triggers.create(rule, { apiKeyId: req.apiKeyId });
    return reply.code(201).send(shown(t));
  });

  app.get(`${prefix}/triggers`, { onRequest: auth }, async () => (await s.triggers.list()).map(shown));

  app.get<{ Params: { id: string } }>(`${prefix}/triggers/:id`, { onRequest: auth, schema: { params: triggerParams } }, async (req) => {
    const t = await s.triggers.get(req.params.id);
    if (!t) throw new BurrowError(Code.NotFound, `trigger "${req.params.id}" not found`);
    return { ...shown(t), fired: s.triggers.fired(t.id) };
  });

  // A rule's runs for the dashboard's pipeline: the event each came from, the task's state and attempts, and the
  // outcome (exit code, the tail of its output, the error); the run's settings (env, inputs) stay out.
  app.get<{ Params: { id: string }; Querystring: { limit?: number } }>(
    `${prefix}/triggers/:id/runs`,
    { onRequest: auth, schema: { params: triggerParams, querystring: { type: "object", properties: { limit: { type: "integer", minimum: 1, maximum: 500 } } } } },
    async (req) => {
      const t = await s.triggers.get(req.params.id);
      if (!t) throw new BurrowError(Code.NotFound, `trigger "${req.params.id}" not found`);
      return (await s.triggers.runs(t, req.query.limit ?? 50)).map(runShown);
    },
  );

  app.delete<{ Params: { id: string } }>(`${prefix}/triggers/:id`, { onRequest: auth, schema: { params: triggerParams } }, async (req, reply) => {
    if (!(await s.triggers.delete(req.params.id))) throw new BurrowError(Code.NotFound, `trigger "${req.params.id}" not found`);
    return reply.code(204).send();
  });

  app.post<{ Body: unknown }>(`${prefix}/tasks`, { onRequest: auth }, async (req, reply) => {
    const spec = parseTaskSpec(req.body);
    for (const id of namedSandboxes(spec)) requireSandbox(id);
    if (spec.code && "sandboxId" in spec.target) await s.runner.requireExecutionServer(spec.target.sandboxId);
    const r = await s.triggers.submitTask(spec, { apiKeyId: req.apiKeyId });
    return reply.code(r.duplicate ? 200 : 201).send(r);
  });

  app.get<{ Params: { id: string }; Querystring: { waitMs?: number } }>(`${prefix}/tasks/:id`, {
    onRequest: auth,
    schema: { params: taskParams, querystring: { type: "object", properties: { waitMs: { type: "integer", minimum: 0, maximum: 60_000 } } } },
  }, async (req) => {
    const id = req.params.id;
    const first = await s.triggers.getTask(id);
    if (!first) throw new BurrowError(Code.NotFound, `task "${id}" not found`);
    const waitMs = req.query.waitMs ?? 0;
    if (waitMs === 0 || first.state === "succeeded" || first.state === "dead") return first;
    const ac = new AbortController();
    req.raw.once("close", () => ac.abort());
    try {
      return await s.triggers.tasks.wait(id, { timeoutMs: waitMs, signal: ac.signal });
    } catch (err) {
      if (err instanceof BurrowError && (err.code === Code.DeadlineExceeded || err.code === Code.Canceled)) return (await s.triggers.getTask(id)) ?? first;
      throw err;
    }
  });
}
