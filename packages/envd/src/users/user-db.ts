import { readFileSync, statSync } from "node:fs";

export interface SandboxUser {
  name: string;
  uid: number;
  gid: number;
  home: string;
  shell: string;
  /** Primary gid first, then every group listing the user as a member. */
  groups: number[];
}

interface Db {
  key: string;
  users: Map<string, SandboxUser>;
  uidNames: Map<number, string>;
  gidNames: Map<number, string>;
}

/**
 * Users and groups of the sandbox, parsed from /etc/passwd and /etc/group. envd does not use NSS or template
 * tools (getent, id): the rootfs is arbitrary, and these two files are the Debian-family source of truth.
 * Re-read when either file changes (a user's `useradd` inside the sandbox must be visible).
 */
export class UserDb {
  #db: Db | undefined;
  constructor(
    private readonly passwdPath = "/etc/passwd",
    private readonly groupPath = "/etc/group",
  ) {}

  lookup(name: string): SandboxUser | undefined {
    return this.#load().users.get(name);
  }
  userName(uid: number): string {
    return this.#load().uidNames.get(uid) ?? String(uid);
  }
  groupName(gid: number): string {
    return this.#load().gidNames.get(gid) ?? String(gid);
  }

  #load(): Db {
    const key = [this.passwdPath, this.groupPath].map(fileKey).join("|");
    if (this.#db?.key === key) return this.#db;
    const users = new Map<string, SandboxUser>();
    const uidNames = new Map<number, string>();
    const gidNames = new Map<number, string>();
    const members = new Map<string, number[]>();
    for (const f of readLines(this.groupPath)) {
      const [name, , gidText, list] = f.split(":");
      const gid = Number(gidText);
      if (!name || !Number.isInteger(gid)) continue;
      if (!gidNames.has(gid)) gidNames.set(gid, name);
      for (const m of (list ?? "").split(",").filter(Boolean)) members.set(m, [...(members.get(m) ?? []), gid]);
    }
    for (const f of readLines(this.passwdPath)) {
      const [name, , uidText, gidText, , home, shell] = f.split(":");
      const uid = Number(uidText);
      const gid = Number(gidText);
      if (!name || !Number.isInteger(uid) || !Number.isInteger(gid)) continue;
      if (!uidNames.has(uid)) uidNames.set(uid, name);
      const groups = [gid, ...(members.get(name) ?? []).filter((g) => g !== gid)];
      if (!users.has(name)) users.set(name, { name, uid, gid, home: home || "/", shell: shell || "/bin/sh", groups });
    }
    this.#db = { key, users, uidNames, gidNames };
    return this.#db;
  }
}

function fileKey(path: string): string {
  try {
    const s = statSync(path);
    return `${s.ino}:${s.mtimeMs}:${s.size}`;
  } catch {
    return "missing";
  }
}

function readLines(path: string): string[] {
  try {
    return readFileSync(path, "utf8").split("\n").filter((l) => l && !l.startsWith("#"));
  } catch {
    return [];
  }
}
