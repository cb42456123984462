// Teams, keys, ownership, quotas, audit and team metrics assembled for one server, and the default team made on
// first start: it holds every key that predates teams, and its oldest key (or BURROW_API_KEY) is the instance admin.
import type { FastifyInstance } from "fastify";
import type { Bus } from "@burrow/bus";
import type { Logger } from "pino";
import type { Db } from "../store/database.js";
import type { SandboxStore } from "../store/sandboxes.js";
import type { SandboxRow } from "../store/sandboxes.js";
import type { SandboxService } from "../lifecycle/sandbox-service.js";
import type { ServerConfig } from "../config.js";
import { registerAccessHooks } from "./access-hooks.js";
import { registerApiKeyRoutes } from "./api-key-routes.js";
import { AuditLog } from "./audit-log.js";
import { registerAuditRoutes } from "./audit-routes.js";
import { registerBusNames } from "./bus-names.js";
import type { Caller } from "./caller.js";
import { KeyStreams } from "./key-streams.js";
import { Ownership } from "./ownership.js";
import { TeamMetrics } from "./team-metrics.js";
import { NO_USAGE, TeamQuotas, type QuotaReservation, type SharedQuotaLedger, type TeamQuotaValues, type TeamUsage } from "./team-quotas.js";
import { registerTeamRoutes } from "./team-routes.js";
import type { TeamResources } from "./team-delete.js";
import { TeamStore } from "./team-store.js";
import { ALL_TEAMS, sandboxListTeam } from "./sandbox-list-scope.js";
import { registerTemplateNames } from "./template-names.js";

export const DEFAULT_TEAM_NAME = "default";

export interface TeamServices {
  store: TeamStore;
  ownership: Ownership;
  quotas: TeamQuotas;
  audit: AuditLog;
  metrics: TeamMetrics;
  streams: KeyStreams;
  defaultTeamId: string;
  /** Template id and names of a reference (id, name, `name:tag`), whoever owns it. */
  resolveTemplate: (ref: string) => { templateId: string; aliases: string[] } | undefined;
  /**
   * Count a template build of a team as running until the builder says it ended (maxConcurrentBuilds); `hold`: its
   * place in the cluster's ledger, released then.
   */
  buildStarted(teamId: string, templateId: string, buildId: string, hold?: QuotaReservation): void;
  /**
   * The sandboxes a list shows a caller, of the rows given: its team's, or with `team` (Burrow's query parameter)
   * another team's or every team's for the instance admin (sandbox-list-scope.ts).
   */
  visibleSandboxes(caller: Caller | null, rows: SandboxRow[], team?: string): SandboxRow[];
  close(): void;
}

export interface TeamServicesDeps {
  db: Db;
  sandboxStore: SandboxStore;
  resolveTemplate: (ref: string) => { templateId: string; aliases: string[] } | undefined;
  quotaDefaults: TeamQuotaValues;
  bus?: Bus | undefined;
  logger: Logger;
  /** The plaintext of BURROW_API_KEY, which is the instance admin's. */
  configuredKey: string | null;
  /** The plaintext of a key created at this start (completed with its mask). */
  createdKey: string | null;
  /** A build's status, to count a team's running builds. */
  buildStatus?: ((templateId: string, buildId: string) => string | undefined) | undefined;
  /** Volumes with their team and size limit, for the teams' disk totals. */
  volumes?: (() => readonly { teamId: string; sizeMB: number }[]) | undefined;
  /**
   * On a node of a cluster: teams' running sandboxes, vCPUs and memory on the other nodes (cluster/team-usage.ts;
   * the key null is the default team), added to this node's own for quota checks, so a limit holds cluster-wide.
   */
  usageElsewhere?: (() => ReadonlyMap<string | null, { runningSandboxes: number; vcpu: number; memoryMB: number; diskMB?: number }>) | undefined;
  /**
   * On a node of a cluster: every node's quota holds and starts (cluster/team-ledger.ts), by the team's shared id
   * (DEFAULT_TEAM_LEDGER_KEY for the default team, which is each node's own but counted as one, as usageElsewhere does).
   */
  ledger?: SharedQuotaLedger | undefined;
}

/** The ledger's key of the default team (team ids are UUIDs: never this). */
export const DEFAULT_TEAM_LEDGER_KEY = "_default";

/** How often builds holding a place in the cluster's ledger are asked whether they ended. */
const BUILD_POLL_MS = 2_000;

export function openTeamServices(d: TeamServicesDeps): TeamServices {
  const store = new TeamStore(d.db);
  const defaultTeamId = (store.teams().find((t) => t.name === DEFAULT_TEAM_NAME) ?? store.teams()[0] ?? store.createTeam(DEFAULT_TEAM_NAME)).teamId;
  store.adoptKeys(defaultTeamId);
  for (const key of [d.createdKey, d.configuredKey]) if (key) store.completeKey(key);
  if (d.configuredKey) store.makeInstanceAdmin(d.configuredKey);

  const ownership = new Ownership({
    db: d.db,
    defaultTeamId: () => defaultTeamId,
    teamOfKey: (id) => store.teamOfKey(id),
    sandbox: (id) => d.sandboxStore.get(id),
    resolveTemplate: d.resolveTemplate,
  });
  // What every team holds now: running sandboxes' counts, vCPUs and memory; every sandbox's and volume's disk.
  const running = () => {
    const byTeam = new Map<string, TeamUsage>();
    const of = (team: string) => {
      const u = byTeam.get(team) ?? { ...NO_USAGE };
      byTeam.set(team, u);
      return u;
    };
    for (const row of d.sandboxStore.list()) {
      const u = of(ownership.teamOfSandbox(row));
      u.diskMB += row.diskSizeMB;
      if (row.state !== "running") continue;
      u.runningSandboxes++;
      u.vcpu += row.cpuCount;
      u.memoryMB += row.memoryMB;
    }
    for (const volume of d.volumes?.() ?? []) of(volume.teamId).diskMB += volume.sizeMB;
    return byTeam;
  };
  const builds = new Map<string, Set<string>>();
  const ledgerKey = (teamId: string) => (teamId === defaultTeamId ? DEFAULT_TEAM_LEDGER_KEY : teamId);
  const quotas = new TeamQuotas({
    defaults: d.quotaDefaults,
    overrides: (teamId) => store.team(teamId)?.quotas ?? {},
    usage: (teamId) => {
      const u = { ...(running().get(teamId) ?? NO_USAGE) };
      if (!d.usageElsewhere) return u;
      const elsewhere = d.usageElsewhere();
      for (const other of [elsewhere.get(teamId), teamId === defaultTeamId ? elsewhere.get(null) : undefined]) {
        if (!other) continue;
        u.runningSandboxes += other.runningSandboxes;
        u.vcpu += other.vcpu;
        u.memoryMB += other.memoryMB;
        u.diskMB += other.diskMB ?? 0;
      }
      return u;
    },
    runningBuilds: (teamId) => countBuilds(teamId),
    ledger: d.ledger
      ? {
          reserve: (teamId, ...rest) => d.ledger!.reserve(ledgerKey(teamId), ...rest),
          setVolumes: (teamId, volumesMB) => d.ledger!.setVolumes(ledgerKey(teamId), volumesMB),
        }
      : undefined,
    localVolumesMB: (teamId) => (d.volumes?.() ?? []).reduce((sum, v) => (v.teamId === teamId ? sum + v.sizeMB : sum), 0),
  });
  // Other nodes count this node's volumes from the ledger: its figures as they are at start.
  if (d.ledger) for (const teamId of new Set((d.volumes?.() ?? []).map((v) => v.teamId))) quotas.volumesChanged(teamId);
  /** A team's running builds, forgetting (and releasing the holds of) those that ended. */
  function countBuilds(teamId: string): number {
    const set = builds.get(teamId);
    if (!set) return 0;
    for (const entry of [...set]) {
      const [templateId, buildId] = entry.split("\n") as [string, string];
      const status = d.buildStatus?.(templateId, buildId);
      if (status !== "building" && status !== "waiting") {
        set.delete(entry);
        buildHolds.get(entry)?.release();
        buildHolds.delete(entry);
      }
    }
    return set.size;
  }
  // Builds with a hold in the cluster's ledger: released once they end, asked every few seconds.
  const buildHolds = new Map<string, QuotaReservation>();
  const buildPoll = setInterval(() => {
    for (const [teamId, set] of builds) if ([...set].some((entry) => buildHolds.has(entry))) countBuilds(teamId);
  }, BUILD_POLL_MS);
  buildPoll.unref();
  const metrics = new TeamMetrics({ db: d.db, running: () => new Map([...running()].map(([team, u]) => [team, u.runningSandboxes])) });
  metrics.start();
  const audit = new AuditLog({ db: d.db, bus: d.bus, logger: d.logger });
  const streams = new KeyStreams();
  const services: TeamServices = {
    store,
    ownership,
    quotas,
    audit,
    metrics,
    streams,
    defaultTeamId,
    resolveTemplate: d.resolveTemplate,
    buildStarted: (teamId, templateId, buildId, hold) => {
      const entry = `${templateId}\n${buildId}`;
      const set = builds.get(teamId) ?? new Set<string>();
      set.add(entry);
      builds.set(teamId, set);
      if (!hold) return;
      buildHolds.get(entry)?.release();
      buildHolds.set(entry, hold);
      countBuilds(teamId);
    },
    visibleSandboxes: (caller, rows, team) => {
      if (!caller) return rows;
      const which = sandboxListTeam(caller, team, (id) => store.team(id) !== undefined);
      return which === ALL_TEAMS ? rows : rows.filter((r) => ownership.teamOfSandbox(r) === which);
    },
    close: () => {
      clearInterval(buildPoll);
      metrics.close();
    },
  };
  return services;
}

/** Routes (teams, keys, audit) and the access hooks every other route passes through. */
export function registerTeams(app: FastifyInstance, t: TeamServices, deps: {
  sandboxes: SandboxService;
  config: () => ServerConfig;
  templateSize: (ref: string) => { cpuCount: number; memoryMB: number; diskMB: number } | undefined;
  /** What a team holds, for its deletion. */
  resources: TeamResources;
}): void {
  // Names first: the access hooks judge the stored names requests are rewritten to.
  registerTemplateNames(app, {
    defaultTeamId: t.defaultTeamId,
    exists: (ref) => t.resolveTemplate(ref) !== undefined,
    templateIdOf: (ref) => t.resolveTemplate(ref)?.templateId,
  });
  registerBusNames(app, { defaultTeamId: t.defaultTeamId });
  registerAccessHooks(app, {
    ownership: t.ownership,
    quotas: t.quotas,
    audit: t.audit,
    metrics: t.metrics,
    sandboxes: deps.sandboxes,
    config: deps.config,
    templateSize: deps.templateSize,
    buildStarted: (teamId, templateId, buildId) => t.buildStarted(teamId, templateId, buildId),
  });
  registerListFilters(app, t);
  registerTeamRoutes(app, t, deps.resources);
  registerApiKeyRoutes(app, t);
  registerAuditRoutes(app, t);
}

/** Unpaginated lists whose routes know nothing of teams: filtered on the way out, one rule per route. */
function registerListFilters(app: FastifyInstance, t: TeamServices): void {
  type Item = Record<string, unknown>;
  const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
  const ownsSandbox = (c: Caller, id: string | undefined) => {
    const row = id !== undefined ? t.ownership.sandboxRow(id) : undefined;
    return row !== undefined && t.ownership.teamOfSandbox(row) === c.teamId;
  };
  const filters: Record<string, (c: Caller, item: Item) => boolean> = {
    "/templates": (c, i) => str(i["templateID"]) !== undefined && t.ownership.canSee(c, "template", str(i["templateID"])!),
    // Triggers made before teams (unrecorded) are the instance admin's.
    "/burrow/v1/triggers": (c, i) => {
      const id = str(i["id"]);
      return id !== undefined && (t.ownership.recordedOwner("trigger", id) ?? (c.instanceAdmin ? c.teamId : undefined)) === c.teamId;
    },
    // Host callers' usage (no sandbox) and every team's are the operator's; a team sees its live sandboxes' rows.
    "/burrow/v1/models/usage": (c, i) => c.instanceAdmin || ownsSandbox(c, str(i["sandboxID"])),
  };
  app.addHook("onSend", async (request, reply, payload) => {
    const c = request.caller;
    const filter = filters[request.routeOptions.url ?? ""];
    if (!c || !filter || request.method !== "GET" || reply.statusCode !== 200 || typeof payload !== "string") return payload;
    let items: unknown;
    try {
      items = JSON.parse(payload);
    } catch {
      return payload;
    }
    if (!Array.isArray(items)) return payload;
    const out = JSON.stringify(items.filter((item: Item) => filter(c, item)));
    reply.header("content-length", Buffer.byteLength(out));
    return out;
  });
}
