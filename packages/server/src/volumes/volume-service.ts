// Volumes for the control plane: names, tokens, who made them and which sandboxes mount them (burrow.db), their
// files through the orchestrator. Volumes belong to a team (their creating key's) and names are unique per team, as
// on E2B. Every lookup of a volume by id or name goes through findVolume, the one place that scopes them: another
// team's volume is absent, by id and by name (a create's volumeMounts name volumes of the caller's team).
import { randomBytes } from "node:crypto";
import type { Orchestrator, VolumeHost, VolumeMount } from "@burrow/orchestrator";
import { BurrowError, Code } from "@burrow/protocol";
import { checkMountPath } from "./mount-paths.js";
import type { MountRow, VolumeRow, VolumeStore } from "./volume-store.js";
import { VolumeTokens } from "./volume-tokens.js";

/** Who asks: the API key of a request (its team is the deps' teamOfKey), or a team itself (a team's deletion). */
export type VolumeCaller = { apiKeyId: number | null } | { teamId: string };

/** A create's volumeMounts, checked and held until the sandbox's mounts are recorded (or the create failed). */
export interface MountReservation {
  mounts: VolumeMount[];
  /** Record the mounts of the sandbox that was created with them (throws: the caller kills the sandbox). */
  record(sandboxId: string): void;
  /** Let go of the hold (after record, or when the create failed). */
  release(): void;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

export class VolumeService {
  /** Creates in flight holding each volume (a volume held or mounted cannot be deleted). */
  readonly #held = new Map<string, number>();
  /** Volumes being deleted: creates that name them are refused meanwhile. */
  readonly #deleting = new Set<string>();
  readonly #tokens: VolumeTokens;

  constructor(
    private readonly deps: {
      store: VolumeStore;
      orchestrator: Orchestrator;
      stateDir: string;
      /** Size limit of a new volume in MiB. */
      defaultSizeMB: number;
      /** The team of a key (null: no key, the default team). */
      teamOfKey: (apiKeyId: number | null) => string;
      /** Owner of volumes migrated before any team existed. */
      defaultTeamId: string;
    },
  ) {
    this.#tokens = VolumeTokens.open(deps.stateDir);
    deps.store.adoptOrphans(deps.defaultTeamId);
  }

  get supported(): boolean {
    const o = this.deps.orchestrator;
    return Boolean(o.createVolume && o.deleteVolume && o.volumeHost);
  }

  #requireSupport(): Required<Pick<Orchestrator, "createVolume" | "deleteVolume" | "volumeHost">> {
    const o = this.deps.orchestrator;
    if (!o.createVolume || !o.deleteVolume || !o.volumeHost) {
      throw new BurrowError(Code.Unimplemented, "volumes are not supported by this orchestrator", { reason: "volumes_unsupported" });
    }
    return { createVolume: o.createVolume.bind(o), deleteVolume: o.deleteVolume.bind(o), volumeHost: o.volumeHost.bind(o) };
  }

  /** The one lookup of a volume, by id or by name, as the caller may see it; undefined when there is none. */
  findVolume(ref: { volumeId: string } | { name: string }, caller: VolumeCaller): VolumeRow | undefined {
    const teamId = this.#teamOf(caller);
    if ("name" in ref) return this.deps.store.getByName(teamId, ref.name);
    const row = this.deps.store.get(ref.volumeId);
    return row?.teamId === teamId ? row : undefined;
  }

  #teamOf(caller: VolumeCaller): string {
    return "teamId" in caller ? caller.teamId : this.deps.teamOfKey(caller.apiKeyId);
  }

  #require(volumeId: string, caller: VolumeCaller): VolumeRow {
    const row = this.findVolume({ volumeId }, caller);
    if (!row) throw new BurrowError(Code.NotFound, `volume '${volumeId}' not found`, { reason: "volume_not_found" });
    return row;
  }

  tokenOf(row: VolumeRow): string {
    return this.#tokens.tokenOf(row.volumeId, row.tokenSalt);
  }

  async create(name: unknown, caller: VolumeCaller, signal?: AbortSignal): Promise<VolumeRow> {
    const support = this.#requireSupport();
    if (typeof name !== "string" || !NAME.test(name)) {
      throw new BurrowError(
        Code.InvalidArgument,
        `volume name ${JSON.stringify(name)} is not valid: 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit`,
        { reason: "bad_volume_name" },
      );
    }
    if (this.findVolume({ name }, caller)) {
      throw new BurrowError(Code.AlreadyExists, `a volume named '${name}' exists already`, { reason: "volume_exists" });
    }
    const row: VolumeRow = {
      volumeId: randomBytes(10).toString("hex"),
      teamId: this.#teamOf(caller),
      name,
      sizeMB: this.deps.defaultSizeMB,
      tokenSalt: VolumeTokens.newSalt(),
      apiKeyId: "apiKeyId" in caller ? caller.apiKeyId : null,
      createdAt: new Date(),
    };
    await support.createVolume(row.volumeId, { sizeMB: row.sizeMB, ...(signal ? { signal } : {}) });
    try {
      this.deps.store.insert(row);
    } catch (error) {
      await support.deleteVolume(row.volumeId).catch(() => undefined);
      // Two creates of one name in one team at once: the second loses on the UNIQUE constraint.
      if (/UNIQUE/.test((error as Error).message)) {
        throw new BurrowError(Code.AlreadyExists, `a volume named '${name}' exists already`, { reason: "volume_exists" });
      }
      throw error;
    }
    return row;
  }

  list(caller: VolumeCaller): VolumeRow[] {
    return this.deps.store.list().filter((row) => this.findVolume({ volumeId: row.volumeId }, caller) !== undefined);
  }

  get(volumeId: string, caller: VolumeCaller): VolumeRow {
    return this.#require(volumeId, caller);
  }

  /** Delete a volume and its files; refused (409) while a sandbox, running or paused, mounts it. */
  async delete(volumeId: string, caller: VolumeCaller, signal?: AbortSignal): Promise<void> {
    const support = this.#requireSupport();
    const row = this.#require(volumeId, caller);
    if (this.#deleting.has(row.volumeId)) {
      throw new BurrowError(Code.Aborted, `volume '${row.name}' is being deleted`, { reason: "volume_in_use" });
    }
    const mounters = this.deps.store.mountersOf(row.volumeId);
    if (mounters.length > 0 || (this.#held.get(row.volumeId) ?? 0) > 0) {
      const who = mounters.length > 0 ? `sandbox${mounters.length > 1 ? "es" : ""} ${mounters.join(", ")}` : "a sandbox being created";
      throw new BurrowError(Code.FailedPrecondition, `volume '${row.name}' is mounted by ${who}; kill ${mounters.length > 1 ? "them" : "it"} first`, {
        reason: "volume_in_use",
      });
    }
    this.#deleting.add(row.volumeId);
    try {
      await support.deleteVolume(row.volumeId, signal ? { signal } : {});
      this.deps.store.delete(row.volumeId);
    } finally {
      this.#deleting.delete(row.volumeId);
    }
  }

  /**
   * Check a create's volumeMounts ([{name, path}]) and hold the volumes: a bad entry, path or duplicate is a 400
   * naming it, an unknown volume a 404, before anything starts.
   */
  reserveMounts(raw: unknown, caller: VolumeCaller): MountReservation | undefined {
    if (raw === undefined || raw === null) return undefined;
    if (!Array.isArray(raw)) throw new BurrowError(Code.InvalidArgument, "volumeMounts must be an array of {name, path}");
    if (raw.length === 0) return undefined;
    this.#requireSupport();
    const mounts: VolumeMount[] = [];
    const paths = new Set<string>();
    for (const entry of raw as unknown[]) {
      const { name, path } = (entry ?? {}) as { name?: unknown; path?: unknown };
      if (typeof name !== "string" || name.length === 0) {
        throw new BurrowError(Code.InvalidArgument, `volume mount ${JSON.stringify(entry)} needs a volume name`, { reason: "bad_volume_mount" });
      }
      const target = checkMountPath(path);
      for (const other of paths) {
        if (other === target || target.startsWith(`${other}/`) || other.startsWith(`${target}/`)) {
          throw new BurrowError(Code.InvalidArgument, `volume mount path ${JSON.stringify(path)} ${other === target ? "is used twice" : `overlaps ${other}`}`, {
            reason: "bad_volume_mount_path",
          });
        }
      }
      paths.add(target);
      const row = this.findVolume({ name }, caller);
      if (!row || this.#deleting.has(row.volumeId)) {
        throw new BurrowError(Code.NotFound, `volume '${name}' not found`, { reason: "volume_not_found" });
      }
      mounts.push({ volumeId: row.volumeId, path: target });
    }
    for (const m of mounts) this.#held.set(m.volumeId, (this.#held.get(m.volumeId) ?? 0) + 1);
    let released = false;
    return {
      mounts,
      record: (sandboxId) => this.deps.store.addMounts(sandboxId, mounts),
      release: () => {
        if (released) return;
        released = true;
        for (const m of mounts) {
          const n = (this.#held.get(m.volumeId) ?? 1) - 1;
          if (n > 0) this.#held.set(m.volumeId, n);
          else this.#held.delete(m.volumeId);
        }
      },
    };
  }

  /** E2B's volumeMounts of a sandbox ([] for none). */
  mountsOf(sandboxId: string): Array<Pick<MountRow, "name" | "path">> {
    return this.deps.store.mountsOf(sandboxId).map(({ name, path }) => ({ name, path }));
  }

  /** The volume a content request names and where its files are: 401 without its bearer token, 404 when unknown. */
  async authorizeContent(volumeId: string, authorization: string | undefined): Promise<{ row: VolumeRow; host: VolumeHost }> {
    const support = this.#requireSupport();
    const token = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "")?.[1];
    if (!token) throw new BurrowError(Code.Unauthenticated, "missing volume token: send it as Authorization: Bearer <token>");
    const row = this.deps.store.get(volumeId);
    if (!row) throw new BurrowError(Code.NotFound, `volume '${volumeId}' not found`, { reason: "volume_not_found" });
    if (!this.#tokens.matches(row.volumeId, row.tokenSalt, token)) throw new BurrowError(Code.Unauthenticated, "invalid volume token");
    const host = await support.volumeHost(row.volumeId);
    if (!host) throw new BurrowError(Code.NotFound, `volume '${volumeId}' has no files on this host`, { reason: "volume_not_found" });
    return { row, host };
  }
}
