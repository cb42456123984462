// Which registries a build may pull from and how: operators name mirrors and plain-HTTP registries; everything
// else is HTTPS to a public address, so a build cannot make the host fetch from its own loopback or private
// network (SSRF through `fromImage('10.0.0.5/x')`).

export interface RegistryOptions {
  /**
   * Registry hosts (`host[:port]`) reached over plain HTTP, and allowed to resolve to loopback or private
   * addresses: a registry on the machine or the LAN. @default [] (env BURROW_INSECURE_REGISTRIES, comma-separated)
   */
  readonly insecure: readonly string[];
  /**
   * Pull-through mirrors per registry host, tried in order before the registry itself, e.g.
   * `{"docker.io": ["http://127.0.0.1:5000"]}`. Mirrors are trusted like insecure registries.
   * @default {} (env BURROW_REGISTRY_MIRRORS, `docker.io=http://m1,docker.io=https://m2`)
   */
  readonly mirrors: Readonly<Record<string, readonly string[]>>;
  /**
   * Pull from registries on the internet (besides mirrors and insecure registries). Off for air-gapped servers
   * and for test servers, which must never send a packet beyond the machine.
   * @default true (env BURROW_PUBLIC_REGISTRIES=false turns it off)
   */
  readonly allowPublic: boolean;
}

export const DEFAULT_REGISTRY_OPTIONS: RegistryOptions = Object.freeze({ insecure: Object.freeze([]), mirrors: Object.freeze({}), allowPublic: true });

/** Parse the environment's comma-separated forms (see the fields' docs); throws on malformed entries. */
export function registryOptionsFromEnv(env: NodeJS.ProcessEnv): RegistryOptions {
  const list = (value: string | undefined) =>
    (value ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== "");
  const mirrors: Record<string, string[]> = {};
  for (const entry of list(env.BURROW_REGISTRY_MIRRORS)) {
    const eq = entry.indexOf("=");
    const host = entry.slice(0, eq);
    const url = entry.slice(eq + 1);
    if (eq <= 0 || !/^https?:\/\/[^/]+\/?$/.test(url)) {
      throw new Error(`BURROW_REGISTRY_MIRRORS entry '${entry}' must look like docker.io=https://mirror.example`);
    }
    (mirrors[host] ??= []).push(url.replace(/\/$/, ""));
  }
  const pub = (env.BURROW_PUBLIC_REGISTRIES ?? "true").toLowerCase();
  if (!["true", "false", "1", "0"].includes(pub)) throw new Error(`BURROW_PUBLIC_REGISTRIES must be true or false, got '${pub}'`);
  return Object.freeze({
    insecure: Object.freeze(list(env.BURROW_INSECURE_REGISTRIES)),
    mirrors: Object.freeze(mirrors),
    allowPublic: pub === "true" || pub === "1",
  });
}
