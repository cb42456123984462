// Template names per team, as E2B has them: two teams may each build a template called `agent`. The orchestrator
// keys templates by one global name, so a team's names are stored under its namespace, `t-<12 hex of the team
// id>/<name>` (`/` is a legal name character there, and E2B's own names are `<team slug>/<name>`), and shown without
// it to the team's keys. The default team (the instance admin's, and every template built before teams) keeps bare
// names, so nothing built before moves. A name a request gives resolves within the caller's team first, then as
// given: public (shipped) templates, ids, and other teams' names, which ownership.ts answers 404. Trigger rules and
// tasks are resolved the same way: a run target's `template` becomes the stored name, and an event filter's
// `templateId` the template's id, since events carry ids (a rule naming `my-tpl` fires for sandboxes of the team's
// `my-tpl`, of every team's key alike).
import type { FastifyInstance, FastifyRequest } from "fastify";
import { BurrowError, Code } from "@burrow/protocol";
import type { Caller } from "./caller.js";

export interface TemplateNamesDeps {
  defaultTeamId: string;
  /** Whether a name (`name` or `name:tag`, an id) names a template now. */
  exists: (ref: string) => boolean;
  /** The id of the template a stored name (or id) names now. */
  templateIdOf: (ref: string) => string | undefined;
}

const NAMESPACE = /^t-[0-9a-f]{12}\//;

/** The namespace of a team's names, with its trailing `/`; empty for the default team. */
export function teamNamespace(teamId: string, defaultTeamId: string): string {
  return teamId === defaultTeamId ? "" : `t-${teamId.replace(/-/g, "").slice(0, 12).toLowerCase()}/`;
}

/**
 * The stored name of a name a team creates: in its namespace. A name already in the caller's namespace is kept;
 * one in another team's is refused, so that no team can take another's stored names.
 */
export function storedNameForCreate(name: string, namespace: string): string {
  if (namespace !== "" && name.startsWith(namespace)) return name;
  if (NAMESPACE.test(name)) {
    throw new BurrowError(Code.InvalidArgument, `template name "${name}" is in a reserved namespace (t-<hex>/); choose another name`);
  }
  return namespace + name;
}

/** The stored name a reference resolves to for a team: its own template of that name if there is one, else as given. */
export function resolveForTeam(ref: string, namespace: string, exists: (ref: string) => boolean): string {
  if (namespace === "" || ref.startsWith(namespace)) return ref;
  // By the name alone: `name:tag` is the team's when the name is, whether or not the tag exists yet.
  return exists(namespace + ref.split(":")[0]!) ? namespace + ref : ref;
}

type Fields = Record<string, unknown>;

/** Rewrite what requests name and strip the caller's namespace from what answers show. */
export function registerTemplateNames(app: FastifyInstance, d: TemplateNamesDeps): void {
  const namespaceOf = (c: Caller) => teamNamespace(c.teamId, d.defaultTeamId);
  app.addHook("preValidation", async (request) => {
    const caller = request.caller;
    if (!caller) return;
    rewriteRequest(request, namespaceOf(caller), d);
  });
  app.addHook("onSend", async (request, reply, payload) => {
    const caller = request.caller;
    if (!caller || typeof payload !== "string") return payload;
    const namespace = namespaceOf(caller);
    if (namespace === "" || !payload.includes(namespace)) return payload;
    const out = payload.split(namespace).join("");
    if (reply.hasHeader("content-length")) reply.header("content-length", Buffer.byteLength(out));
    return out;
  });
}

const RULE_ROUTES = new Set(["/burrow/v1/triggers", "/burrow/v1/tasks"]);

function rewriteRequest(request: FastifyRequest, namespace: string, d: TemplateNamesDeps): void {
  const url = request.routeOptions.url ?? "";
  const method = request.method;
  const body = (typeof request.body === "object" && request.body !== null && !Array.isArray(request.body) ? request.body : undefined) as Fields | undefined;
  const params = (request.params ?? {}) as Fields;
  const resolve = (ref: string) => resolveForTeam(ref, namespace, d.exists);
  if (method === "POST" && url === "/v3/templates" && body) {
    // Reserved namespaces are refused for every caller, the default team's too.
    for (const field of ["name", "alias"]) if (typeof body[field] === "string") body[field] = storedNameForCreate(body[field] as string, namespace);
    return;
  }
  if (method === "POST" && RULE_ROUTES.has(url) && body) {
    rewriteRule(body, resolve, d.templateIdOf);
    return;
  }
  if (namespace === "") return;
  for (const field of ["templateID", "alias"]) if (typeof params[field] === "string") params[field] = resolve(params[field] as string);
  if (!body) return;
  if (method === "POST" && (url === "/v2/sandboxes" || url === "/sandboxes") && typeof body["templateID"] === "string") {
    body["templateID"] = resolve(body["templateID"]);
  }
  if (method === "POST" && url === "/v2/templates/:templateID/builds/:buildID" && typeof body["fromTemplate"] === "string") {
    body["fromTemplate"] = resolve(body["fromTemplate"]);
  }
  if (method === "POST" && url === "/templates/tags" && typeof body["target"] === "string") body["target"] = resolve(body["target"]);
  if (method === "DELETE" && url === "/templates/tags" && typeof body["name"] === "string") body["name"] = resolve(body["name"]);
}

/** A trigger rule's or task's templates: `in`/`target` `{template}` to the stored name, `on.templateId` to the id. */
function rewriteRule(body: Fields, resolve: (ref: string) => string, templateIdOf: (ref: string) => string | undefined): void {
  const field = (key: string): Fields | undefined => {
    const v = body[key];
    return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Fields) : undefined;
  };
  for (const target of [field("in"), field("target")]) {
    if (typeof target?.["template"] === "string") target["template"] = resolve(target["template"]);
  }
  const on = field("on");
  if (typeof on?.["templateId"] === "string") on["templateId"] = templateIdOf(resolve(on["templateId"])) ?? on["templateId"];
}
