// The one place that decides whether a caller's team owns a resource. Sandboxes belong to the team of the key that
// created them (sandboxes.api_key_id); templates, snapshots and checkpoints to the team recorded in resource_owners
// when they were made. Shipped templates (base, code-interpreter, desktop, …) that no team built are public:
// everyone may start sandboxes from them, only the instance admin may change them. Everything a team does not own
// answers 404 with the same message as a resource that does not exist, so ids of other teams reveal nothing.
// The instance admin is scoped like any key for sandboxes and templates (it sees its own team's), except that it reads
// and kills any sandbox by id and lists any team's with `team` (access-hooks.ts, sandbox-list-scope.ts); it alone sees
// every team's audit log and bus subjects.
import { BurrowError, Code } from "@burrow/protocol";
import { decodeToken } from "@burrow/bus";
import type { Db } from "../store/database.js";
import type { SandboxRow } from "../store/sandboxes.js";
import type { Caller } from "./caller.js";

/** Kinds recorded in resource_owners (sandboxes are owned through their key). */
export type OwnedKind = "template" | "snapshot" | "checkpoint" | "trigger" | "volume" | "secret";
export type ResourceKind = OwnedKind | "sandbox";

/** Templates shipped with Burrow (or prebuilt on first use): public unless a team built one of that name. */
export const PUBLIC_TEMPLATE_NAMES: ReadonlySet<string> = new Set([
  "base", "code-interpreter", "code-interpreter-v1", "desktop", "browser", "mcp-gateway",
]);

/** Subjects a team key may use besides its sandboxes' events: `team.<teamId>.…` (free) and `audit.<teamId>.…`. */
export const TEAM_SUBJECT_ROOT = "team";
export const AUDIT_SUBJECT_ROOT = "audit";

export const PUBLIC_OWNER = "public";

export interface OwnershipDeps {
  db: Db;
  defaultTeamId: () => string;
  teamOfKey: (keyId: number) => string | undefined;
  sandbox: (sandboxId: string) => SandboxRow | undefined;
  /** Template id and names of a reference (id, alias, `alias:tag`, snapshot id or name). */
  resolveTemplate: (ref: string) => { templateId: string; aliases: string[] } | undefined;
}

export function notFound(kind: ResourceKind, id: string): BurrowError {
  switch (kind) {
    case "sandbox":
      return new BurrowError(Code.NotFound, `sandbox "${id}" doesn't exist or you don't have access to it`);
    case "template":
    case "snapshot":
      return new BurrowError(Code.NotFound, `template '${id}' not found`);
    default:
      return new BurrowError(Code.NotFound, `${kind} "${id}" not found`);
  }
}

export class Ownership {
  readonly #d: OwnershipDeps;
  readonly #get;
  readonly #put;
  readonly #delete;

  constructor(deps: OwnershipDeps) {
    this.#d = deps;
    this.#get = deps.db.prepare<[string, string], { team_id: string }>("SELECT team_id FROM resource_owners WHERE kind = ? AND resource_id = ?");
    this.#put = deps.db.prepare<[string, string, string, number]>(
      "INSERT INTO resource_owners (kind, resource_id, team_id, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (kind, resource_id) DO NOTHING",
    );
    this.#delete = deps.db.prepare<[string, string]>("DELETE FROM resource_owners WHERE kind = ? AND resource_id = ?");
  }

  /** Record who made a resource. The first record wins: a rebuild does not move a template to another team. */
  record(kind: OwnedKind, resourceId: string, teamId: string): void {
    this.#put.run(kind, resourceId, teamId, Date.now());
  }

  forget(kind: OwnedKind, resourceId: string): void {
    this.#delete.run(kind, resourceId);
  }

  /** The team that owns a sandbox row (rows from before keys had teams belong to the default team). */
  teamOfSandbox(row: SandboxRow): string {
    return this.teamOfKeyId(row.apiKeyId);
  }

  /** The team of what a key made (sandboxes, volumes): its key's team; without a key, the default team. */
  teamOfKeyId(keyId: number | null): string {
    return (keyId !== null ? this.#d.teamOfKey(keyId) : undefined) ?? this.#d.defaultTeamId();
  }

  /** Ids of the resources of these kinds recorded as the team's, oldest first (some may be gone since). */
  recordedOf(teamId: string, kinds: readonly OwnedKind[]): Array<{ kind: OwnedKind; id: string }> {
    return this.#d.db
      .prepare<[string], { kind: OwnedKind; resource_id: string }>("SELECT kind, resource_id FROM resource_owners WHERE team_id = ? ORDER BY created_at")
      .all(teamId)
      .filter((r) => kinds.includes(r.kind))
      .map((r) => ({ kind: r.kind, id: r.resource_id }));
  }

  /** The owner of a recorded resource, or undefined. */
  recordedOwner(kind: OwnedKind, resourceId: string): string | undefined {
    return this.#get.get(kind, resourceId)?.team_id;
  }

  /**
   * The owner of a template reference: its recorded team (as a template, snapshot or checkpoint), PUBLIC_OWNER for a
   * shipped one nobody built, else the default team (made before teams existed). Undefined when nothing resolves.
   */
  teamOfTemplate(ref: string): string | undefined {
    const direct = this.recordedOwner("checkpoint", ref) ?? this.recordedOwner("snapshot", ref) ?? this.recordedOwner("template", ref);
    if (direct) return direct;
    const found = this.#d.resolveTemplate(ref);
    if (!found) return undefined;
    const recorded = this.recordedOwner("template", found.templateId) ?? this.recordedOwner("snapshot", found.templateId);
    if (recorded) return recorded;
    const name = ref.split(":")[0]!;
    if (PUBLIC_TEMPLATE_NAMES.has(name) || found.aliases.some((a) => PUBLIC_TEMPLATE_NAMES.has(a))) return PUBLIC_OWNER;
    return this.#d.defaultTeamId();
  }

  /** Whether the caller's team may see (and use) a resource. Unknown resources are not visible. */
  canSee(caller: Caller, kind: ResourceKind, id: string): boolean {
    const owner = this.#owner(kind, id);
    return owner !== undefined && (owner === caller.teamId || (owner === PUBLIC_OWNER && kind !== "sandbox"));
  }

  /** A sandbox's row, whoever owns it (for filters that then compare teams). */
  sandboxRow(sandboxId: string): SandboxRow | undefined {
    return this.#d.sandbox(sandboxId);
  }

  /** A sandbox the caller may act on, else 404 (also when it does not exist). */
  requireSandbox(caller: Caller, sandboxId: string): SandboxRow {
    const row = this.#d.sandbox(sandboxId);
    if (!row || this.teamOfSandbox(row) !== caller.teamId) throw notFound("sandbox", sandboxId);
    return row;
  }

  /** 404 when the sandbox exists and is another team's; a sandbox nobody has is left to the caller to answer. */
  requireSandboxIfExists(caller: Caller, sandboxId: string): void {
    const row = this.#d.sandbox(sandboxId);
    if (row && this.teamOfSandbox(row) !== caller.teamId) throw notFound("sandbox", sandboxId);
  }

  /**
   * 404 unless the caller's team owns the resource (or, to read or use, it is public). Resources the server does not
   * know are let through: the route answers its own 404, or creates it.
   */
  require(caller: Caller, kind: ResourceKind, id: string, use: "read" | "write" = "read"): void {
    if (kind === "sandbox") {
      this.requireSandbox(caller, id);
      return;
    }
    const owner = this.#owner(kind, id);
    if (owner === undefined || owner === caller.teamId) return;
    if (owner === PUBLIC_OWNER) {
      if (use === "read" || caller.instanceAdmin) return;
      throw new BurrowError(Code.PermissionDenied, `template '${id}' is shipped with Burrow; only the instance admin key may change it`);
    }
    throw notFound(kind, id);
  }

  /** Filter a list to what the caller's team may see. */
  visible<T>(caller: Caller, kind: ResourceKind, items: readonly T[], idOf: (item: T) => string): T[] {
    return items.filter((item) => this.canSee(caller, kind, idOf(item)));
  }

  /**
   * Whether a bus subject (or pattern) is the caller's: events of its own sandboxes (`sbx.<template>.<sandbox id>.…`
   * with a literal sandbox id), its team's free namespace `team.<teamId>.…`, and its team's audit events
   * `audit.<teamId>.…` (subscribe only). The instance admin may use any subject.
   */
  requireSubject(caller: Caller, subject: string, mode: "publish" | "subscribe"): void {
    if (caller.instanceAdmin) return;
    const tokens = subject.split(".");
    const [root, second, third] = tokens;
    if (root === TEAM_SUBJECT_ROOT && second === caller.teamId && tokens.length >= 3) return;
    if (mode === "subscribe" && root === AUDIT_SUBJECT_ROOT && second === caller.teamId) return;
    if (mode === "subscribe" && root === "sbx" && third !== undefined && third !== "*" && third !== ">") {
      let sandboxId = third;
      try {
        sandboxId = decodeToken(third);
      } catch {
        // Not an encoded token: taken as the id itself.
      }
      const row = this.#d.sandbox(sandboxId);
      if (row && this.teamOfSandbox(row) === caller.teamId) return;
    }
    throw new BurrowError(
      Code.PermissionDenied,
      `subject "${subject}" is outside your team's subjects: ${mode === "subscribe" ? "sbx.*.<your sandbox id>.>, " : ""}` +
        `${TEAM_SUBJECT_ROOT}.${caller.teamId}.>${mode === "subscribe" ? `, ${AUDIT_SUBJECT_ROOT}.${caller.teamId}.>` : ""}`,
    );
  }

  #owner(kind: ResourceKind, id: string): string | undefined {
    if (kind === "sandbox") {
      const row = this.#d.sandbox(id);
      return row && this.teamOfSandbox(row);
    }
    if (kind === "template" || kind === "snapshot") return this.teamOfTemplate(id);
    return this.recordedOwner(kind, id) ?? (kind === "checkpoint" ? this.#d.defaultTeamId() : undefined);
  }
}
