// Who is calling: the key a request authenticated with, its team and its role. Every ownership, quota and audit
// decision starts from this.
import { BurrowError, Code } from "@burrow/protocol";
import type { TeamKey } from "./team-store.js";

export interface Caller {
  /** api_keys.id */
  keyId: number;
  /** The key's public id (E2B's uuid). */
  keyPublicId: string;
  teamId: string;
  /** The operator's key (the first key, or BURROW_API_KEY): sees every team, may name host paths. */
  instanceAdmin: boolean;
  /** May manage its team's keys (the instance admin is one too). */
  teamAdmin: boolean;
  /**
   * The team's oldest key (team-store.ts teamAnchorKey): what tables keyed by an owner key (secrets) store, so that
   * every key of a team shares them.
   */
  teamAnchorKeyId: number;
  /** The plaintext the request presented (E2B's `Team.apiKey` shows it back to its owner); never stored. */
  presentedKey: string;
}

export function callerOf(key: TeamKey, presentedKey: string, teamAnchorKeyId = key.id): Caller {
  return {
    keyId: key.id,
    teamAnchorKeyId,
    keyPublicId: key.publicId,
    teamId: key.teamId,
    instanceAdmin: key.role === "instance_admin",
    teamAdmin: key.role === "admin" || key.role === "instance_admin",
    presentedKey,
  };
}

export function requireTeamAdmin(caller: Caller | null): Caller {
  if (!caller?.teamAdmin) throw new BurrowError(Code.PermissionDenied, "this needs a team admin key");
  return caller;
}

export function requireInstanceAdmin(caller: Caller | null, what: string): Caller {
  if (!caller?.instanceAdmin) throw new BurrowError(Code.PermissionDenied, `${what} needs the instance admin key`);
  return caller;
}
