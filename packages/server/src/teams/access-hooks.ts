// Team scoping of every API route, by what a request names rather than route by route: any route with a
// `:sandboxID`, `:checkpointID`, `:templateID` or `:alias` parameter, and the body fields that name sandboxes,
// templates, checkpoints, bus subjects or host paths, are checked here against the caller's team (ownership.ts),
// and sandbox starts against its quotas (team-quotas.ts). A new route with those parameters is scoped without
// doing anything. After a success, what the request made is recorded as the team's and audited (audit-log.ts).
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { BurrowError, Code } from "@burrow/protocol";
import type { SandboxService } from "../lifecycle/sandbox-service.js";
import type { ServerConfig } from "../config.js";
import type { AuditLog } from "./audit-log.js";
import type { Caller } from "./caller.js";
import { FALLBACK_SANDBOX_SIZE } from "./fresh-sandbox-quota.js";
import { hostPathsInBuild } from "./host-paths.js";
import { PUBLIC_OWNER, PUBLIC_TEMPLATE_NAMES, type Ownership } from "./ownership.js";
import { QUOTA_HOLD_HEADER, takeHandedHold } from "../cluster/quota-hold.js";
import type { QuotaReservation, TeamQuotas } from "./team-quotas.js";
import type { TeamMetrics } from "./team-metrics.js";

export interface AccessHookDeps {
  ownership: Ownership;
  quotas: TeamQuotas;
  audit: AuditLog;
  metrics: TeamMetrics;
  sandboxes: SandboxService;
  config: () => ServerConfig;
  /** A template's default size, for quotas of creates (unknown templates: E2B's defaults). */
  templateSize: (ref: string) => { cpuCount: number; memoryMB: number; diskMB: number } | undefined;
  /** Record a build of the team as running (for maxConcurrentBuilds), with its place in the cluster's ledger if any. */
  buildStarted: (teamId: string, templateId: string, buildId: string, hold?: QuotaReservation) => void;
}

const BURROW = "/burrow/v1";

type Params = Record<string, string | undefined>;

/** Requests of the instance admin on another team's sandbox (reads and kills), by that sandbox's team. */
const crossTeam = new WeakMap<FastifyRequest, string>();
type Body = Record<string, unknown> | undefined;
/** What a successful request started (sandbox ids; a build), for its quota hold to end with (recordOutcome). */
const outcomes = new WeakMap<FastifyRequest, { sandboxIds: string[]; build?: { teamId: string; templateId: string; buildId: string } }>();

export function registerAccessHooks(app: FastifyInstance, d: AccessHookDeps): void {
  // Routes a team key may not use at all are refused before their body is validated.
  app.addHook("preValidation", async (request) => {
    if (request.caller && !request.caller.instanceAdmin) checkInstanceWide(request);
  });
  app.addHook("preHandler", async (request, reply) => {
    const caller = request.caller;
    if (!caller) return;
    checkParams(d, caller, request);
    checkBody(d, caller, request);
    const handed = takeHandedHold(request.headers);
    const reservation = await admitQuotas(d, caller, request, reply, handed);
    if (!reservation) return;
    // A create placed on another node hands its hold over there (cluster/quota-hold.ts).
    if (reservation.holdId !== undefined) request.headers[QUOTA_HOLD_HEADER] = reservation.holdId;
    reply.raw.once("close", () => {
      const outcome = outcomes.get(request);
      if (outcome?.build) d.buildStarted(outcome.build.teamId, outcome.build.templateId, outcome.build.buildId, reservation);
      else reservation.release(outcome?.sandboxIds ?? []);
    });
  });

  app.addHook("onSend", async (request, reply, payload) => {
    const caller = request.caller;
    if (!caller || reply.statusCode >= 300) return payload;
    try {
      recordOutcome(d, caller, request, reply, parsePayload(payload));
    } catch (err) {
      request.log.error({ err }, "could not record the outcome of a request for its team");
    }
    return payload;
  });
}

function parsePayload(payload: unknown): unknown {
  if (typeof payload !== "string" || payload === "") return undefined;
  try {
    return JSON.parse(payload);
  } catch {
    return undefined;
  }
}

function route(request: FastifyRequest): string {
  return request.routeOptions.url ?? "";
}

function checkParams(d: AccessHookDeps, caller: Caller, request: FastifyRequest): void {
  const params = (request.params ?? {}) as Params;
  const url = route(request);
  const use = request.method === "GET" || request.method === "HEAD" ? "read" : "write";
  const sandboxId = params["sandboxID"] ?? params["sandboxId"];
  // Another team's sandbox is 404 like a missing one. A sandbox nobody has is the route's to answer (its own 404, or
  // a 400 for a bad body first): an ended sandbox's logs outlive its row, and the log routes check the team recorded
  // with them (api/sandboxes/logs.ts).
  // The instance admin reads and kills any team's sandbox by id: an operator must be able to stop a runaway one.
  const row = sandboxId !== undefined ? d.ownership.sandboxRow(sandboxId) : undefined;
  if (row && caller.instanceAdmin && (use === "read" || (request.method === "DELETE" && url === "/sandboxes/:sandboxID"))) {
    const team = d.ownership.teamOfSandbox(row);
    if (team !== caller.teamId) crossTeam.set(request, team);
  } else if (sandboxId !== undefined) d.ownership.requireSandboxIfExists(caller, sandboxId);
  if (params["checkpointID"] !== undefined) d.ownership.require(caller, "checkpoint", params["checkpointID"], use);
  if (params["templateID"] !== undefined) d.ownership.require(caller, "template", params["templateID"], use);
  if (params["alias"] !== undefined) d.ownership.require(caller, "template", params["alias"], "read");
  if (params["id"] !== undefined && (url.startsWith(`${BURROW}/triggers/`) || url.startsWith(`${BURROW}/tasks/`))) {
    const owner = d.ownership.recordedOwner("trigger", params["id"]);
    if (owner !== undefined ? owner !== caller.teamId : !caller.instanceAdmin) {
      throw new BurrowError(Code.NotFound, `${url.startsWith(`${BURROW}/tasks/`) ? "task" : "trigger"} "${params["id"]}" not found`);
    }
  }
}

function checkBody(d: AccessHookDeps, caller: Caller, request: FastifyRequest): void {
  const body = (typeof request.body === "object" && request.body !== null ? request.body : undefined) as Body;
  const query = (request.query ?? {}) as Params;
  const url = route(request);
  const method = request.method;
  if (method === "POST" && (url === "/v2/sandboxes" || url === "/sandboxes") && typeof body?.["templateID"] === "string") {
    // Its volumeMounts name volumes within the caller's team (volumes/volume-service.ts scopes them).
    d.ownership.require(caller, "template", body["templateID"], "read");
  }
  if (method === "POST" && url === "/v3/templates") {
    const name = body?.["name"] ?? body?.["alias"];
    if (typeof name === "string") checkTemplateName(d, caller, name);
  }
  if (method === "POST" && url === "/v2/templates/:templateID/builds/:buildID") {
    const paths = hostPathsInBuild(body);
    if (paths.length > 0 && !caller.instanceAdmin) {
      throw new BurrowError(
        Code.PermissionDenied,
        `fromImage "${paths[0]}" names a path on the server; only the instance admin key may build from host paths (use a registry image or upload the files)`,
      );
    }
    if (typeof body?.["fromTemplate"] === "string") d.ownership.require(caller, "template", body["fromTemplate"], "read");
  }
  if (method === "POST" && url === "/templates/tags" && typeof body?.["target"] === "string") {
    d.ownership.require(caller, "template", body["target"], "write");
  }
  if (method === "DELETE" && url === "/templates/tags" && typeof body?.["name"] === "string") {
    d.ownership.require(caller, "template", body["name"], "write");
  }
  if (url === `${BURROW}/sandboxes/:sandboxID/rollback` && typeof body?.["checkpointID"] === "string") {
    d.ownership.require(caller, "checkpoint", body["checkpointID"], "write");
  }
  if (url === `${BURROW}/bus/publish` && typeof body?.["subject"] === "string") d.ownership.requireSubject(caller, body["subject"], "publish");
  if (url === `${BURROW}/bus/subscribe` && typeof query["subject"] === "string") d.ownership.requireSubject(caller, query["subject"], "subscribe");
  if (method === "POST" && (url === `${BURROW}/triggers` || url === `${BURROW}/tasks`)) checkRuleReferences(d, caller, body);
  if (url === `${BURROW}/models/usage` && typeof query["sandboxID"] === "string") d.ownership.requireSandbox(caller, query["sandboxID"]);
}

/** Instance-wide resources: the operator's (instance admin key). Queues and agents are per team (bus-names.ts). */
function checkInstanceWide(request: FastifyRequest): void {
  const url = route(request);
  // The model gateway's providers and settings serve every team. Its usage is per sandbox (filtered on the way out).
  if (url.startsWith(`${BURROW}/models/`) && request.method !== "GET") {
    throw new BurrowError(Code.PermissionDenied, "model providers and gateway settings are the operator's; changing them needs the instance admin key");
  }
}

/** A template name a build asks for must be free or the caller's team's; shipped names are the operator's. */
function checkTemplateName(d: AccessHookDeps, caller: Caller, nameWithTag: string): void {
  const owner = d.ownership.teamOfTemplate(nameWithTag.split(":")[0]!);
  if (owner === undefined || owner === caller.teamId) return;
  if (owner === PUBLIC_OWNER) {
    if (caller.instanceAdmin) return;
    throw new BurrowError(Code.PermissionDenied, `template name "${nameWithTag}" belongs to a template shipped with Burrow; only the instance admin key may rebuild it`);
  }
  throw new BurrowError(Code.AlreadyExists, `template name "${nameWithTag}" is taken on this server; choose another name`);
}

/**
 * Sandboxes and templates a trigger rule or task names must be the team's (recursively, wherever they appear). A
 * sandbox id nobody has is left to the route (a rule may wait for events of a sandbox that does not run now).
 */
function checkRuleReferences(d: AccessHookDeps, caller: Caller, body: unknown): void {
  const visit = (value: unknown, depth: number): void => {
    if (depth > 8 || typeof value !== "object" || value === null) return;
    for (const [key, v] of Object.entries(value)) {
      if (key === "sandboxId" && typeof v === "string") d.ownership.requireSandboxIfExists(caller, v);
      else if ((key === "template" || key === "templateId") && typeof v === "string") {
        if (!caller.instanceAdmin && d.ownership.teamOfTemplate(v) !== caller.teamId) {
          // Rules on a template see every sandbox started from it, other teams' too.
          throw new BurrowError(Code.PermissionDenied, `rules on template "${v}" would see other teams' sandboxes; name your sandboxes, or use a template your team built`);
        }
      } else visit(v, depth + 1);
    }
  };
  visit(body, 0);
}

/**
 * Quotas of what a request starts: new sandboxes (create, fork, branch), resumes, longer timeouts, builds, volumes.
 * `handed`: the quota hold of the node that placed this create here.
 */
async function admitQuotas(d: AccessHookDeps, caller: Caller, request: FastifyRequest, reply: FastifyReply, handed: string | undefined): Promise<QuotaReservation | undefined> {
  if (request.method !== "POST") return undefined;
  const signal = clientGoneSignal(reply);
  const url = route(request);
  const body = (typeof request.body === "object" && request.body !== null ? request.body : {}) as Record<string, unknown>;
  const params = (request.params ?? {}) as Params;
  const timeoutOf = () => (typeof body["timeout"] === "number" ? body["timeout"] : d.config().defaultTimeoutSec);
  if (url === "/v2/sandboxes" || url === "/sandboxes") {
    const size = d.templateSize(String(body["templateID"] ?? "")) ?? FALLBACK_SANDBOX_SIZE;
    return d.quotas.admitShared(caller.teamId, { count: 1, ...size, timeoutSec: timeoutOf(), kind: "new" }, handed, signal);
  }
  if (url === "/sandboxes/:sandboxID/fork" || url === `${BURROW}/checkpoints/:checkpointID/branch`) {
    const source = params["sandboxID"] !== undefined ? d.sandboxes.get(params["sandboxID"]) : undefined;
    const size = source ? { cpuCount: source.cpuCount, memoryMB: source.memoryMB, diskMB: source.diskSizeMB } : (d.templateSize(params["checkpointID"] ?? "") ?? FALLBACK_SANDBOX_SIZE);
    const count = typeof body["count"] === "number" ? body["count"] : 1;
    return d.quotas.admitShared(caller.teamId, { count, ...size, timeoutSec: timeoutOf(), kind: "new" }, undefined, signal);
  }
  if (url === "/sandboxes/:sandboxID/connect" || url === "/v2/sandboxes/:sandboxID/connect" || url === "/sandboxes/:sandboxID/resume") {
    const row = d.sandboxes.get(params["sandboxID"] ?? "");
    if (row?.state === "paused") {
      const ask = { count: 1, cpuCount: row.cpuCount, memoryMB: row.memoryMB, diskMB: row.diskSizeMB, timeoutSec: timeoutOf(), kind: "resume" } as const;
      return d.quotas.admitShared(caller.teamId, ask, undefined, signal);
    }
    if (typeof body["timeout"] === "number") d.quotas.checkTimeout(caller.teamId, body["timeout"]);
    return undefined;
  }
  if (url === "/sandboxes/:sandboxID/timeout" && typeof body["timeout"] === "number") d.quotas.checkTimeout(caller.teamId, body["timeout"]);
  if (url === "/v2/templates/:templateID/builds/:buildID") return d.quotas.admitBuildShared(caller.teamId, signal);
  // Every volume gets the server's size limit (E2B's create names none).
  if (url === "/volumes") return d.quotas.admitVolumeShared(caller.teamId, d.config().volumeDefaultMB, signal);
  return undefined;
}

/** What a successful request made or ended: recorded as the team's, audited, counted. */
function recordOutcome(d: AccessHookDeps, caller: Caller, request: FastifyRequest, reply: FastifyReply, payload: unknown): void {
  const url = route(request);
  const method = request.method;
  const params = (request.params ?? {}) as Params;
  const p = (payload ?? {}) as Record<string, unknown>;
  const audit = (action: string, resourceKind: string, resourceId: string, detail?: Record<string, unknown>) =>
    d.audit.record({ teamId: caller.teamId, keyId: caller.keyPublicId, action, resourceKind, resourceId, detail });
  const made: string[] = [];
  outcomes.set(request, { sandboxIds: made });
  const started = (items: unknown, detail: Record<string, unknown>) => {
    for (const item of Array.isArray(items) ? items : []) {
      const id = (item as { sandbox?: { sandboxID?: unknown } })?.sandbox?.sandboxID;
      if (typeof id === "string") {
        made.push(id);
        audit("create", "sandbox", id, detail);
        d.metrics.started(caller.teamId);
      }
    }
  };
  if (method === "POST" && (url === "/v2/sandboxes" || url === "/sandboxes") && typeof p["sandboxID"] === "string") {
    made.push(p["sandboxID"]);
    audit("create", "sandbox", p["sandboxID"], { templateID: p["templateID"] });
    d.metrics.started(caller.teamId);
  } else if (method === "DELETE" && url === "/sandboxes/:sandboxID") {
    // An operator's kill of another team's sandbox is in that team's log (with the operator's key).
    const team = crossTeam.get(request);
    if (team === undefined) audit("kill", "sandbox", params["sandboxID"]!);
    else d.audit.record({ teamId: team, keyId: caller.keyPublicId, action: "kill", resourceKind: "sandbox", resourceId: params["sandboxID"]!, detail: { byInstanceAdmin: true } });
  } else if (method === "POST" && url === "/sandboxes/:sandboxID/pause") {
    audit("pause", "sandbox", params["sandboxID"]!);
  } else if (method === "POST" && url.endsWith("/:sandboxID/connect") && reply.statusCode === 201) {
    made.push(params["sandboxID"]!);
    audit("resume", "sandbox", params["sandboxID"]!);
    d.metrics.started(caller.teamId);
  } else if (method === "POST" && url === "/sandboxes/:sandboxID/resume") {
    made.push(params["sandboxID"]!);
    audit("resume", "sandbox", params["sandboxID"]!);
  } else if (method === "POST" && url === "/sandboxes/:sandboxID/fork") {
    started(payload, { forkOf: params["sandboxID"] });
  } else if (method === "POST" && url === `${BURROW}/checkpoints/:checkpointID/branch`) {
    started(payload, { branchOf: params["checkpointID"] });
  } else if (method === "POST" && url === "/sandboxes/:sandboxID/snapshots" && typeof p["snapshotID"] === "string") {
    d.ownership.record("snapshot", p["snapshotID"], caller.teamId);
    audit("create", "snapshot", p["snapshotID"], { sandboxID: params["sandboxID"] });
  } else if (method === "POST" && url === `${BURROW}/sandboxes/:sandboxID/checkpoints` && typeof p["checkpointID"] === "string") {
    d.ownership.record("checkpoint", p["checkpointID"], caller.teamId);
    audit("create", "checkpoint", p["checkpointID"], { sandboxID: params["sandboxID"] });
  } else if (method === "POST" && url === `${BURROW}/sandboxes/:sandboxID/rollback`) {
    audit("rollback", "sandbox", params["sandboxID"]!, { checkpointID: p["checkpointID"] });
  } else if (method === "DELETE" && url === `${BURROW}/checkpoints/:checkpointID`) {
    for (const id of Array.isArray(p["deleted"]) ? p["deleted"] : []) if (typeof id === "string") audit("delete", "checkpoint", id);
  } else if (method === "POST" && url === "/v3/templates" && typeof p["templateID"] === "string") {
    // The operator rebuilding a shipped template keeps it public.
    const body = (request.body ?? {}) as Record<string, unknown>;
    const name = String(body["name"] ?? body["alias"] ?? "").split(":")[0]!;
    if (!(caller.instanceAdmin && PUBLIC_TEMPLATE_NAMES.has(name))) d.ownership.record("template", p["templateID"], caller.teamId);
  } else if (method === "POST" && url === "/v2/templates/:templateID/builds/:buildID") {
    // Counted from now on; with a hold in the cluster's ledger, handed over when the request ends (preHandler).
    outcomes.set(request, { sandboxIds: made, build: { teamId: caller.teamId, templateId: params["templateID"]!, buildId: params["buildID"]! } });
    d.buildStarted(caller.teamId, params["templateID"]!, params["buildID"]!);
    audit("build", "template", params["templateID"]!, { buildID: params["buildID"] });
  } else if (method === "POST" && url === "/volumes" && typeof p["volumeID"] === "string") {
    audit("create", "volume", p["volumeID"], { name: p["name"] });
  } else if (method === "DELETE" && url === "/volumes/:volumeID") {
    audit("delete", "volume", params["volumeID"]!);
    d.quotas.volumesChanged(caller.teamId);
  } else if (method === "DELETE" && url === "/templates/:templateID") {
    audit("delete", "template", params["templateID"]!);
  } else if (method === "POST" && (url === `${BURROW}/triggers` || url === `${BURROW}/tasks`) && typeof p["id"] === "string") {
    d.ownership.record("trigger", p["id"], caller.teamId);
  }
}

/** Aborted when the client goes before its answer (a quota hold waiting on the cluster stops trying). */
function clientGoneSignal(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once("close", () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}
