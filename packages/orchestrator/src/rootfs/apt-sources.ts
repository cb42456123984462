// The template is bootstrapped from whatever Debian mirror the machine already trusts: machines
// may only reach a local mirror or a snapshot, so a hard-coded host would break offline installs.
import { readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { BurrowError, Code } from "@burrow/protocol";

/** One `deb` source: a URI with its suites and components. */
export interface AptSource {
  uri: string;
  suites: string[];
  components: string[];
}

/** Parse one-line `sources.list` text; `deb-src` and comments are skipped. */
export function parseSourcesList(text: string): AptSource[] {
  const out: AptSource[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.replace(/#.*$/, "").trim();
    if (!line.startsWith("deb ") && !line.startsWith("deb\t")) continue;
    // Drop the optional `[arch=amd64 signed-by=…]` block before splitting on spaces.
    const words = line.replace(/\[[^\]]*\]/, " ").split(/\s+/).slice(1);
    const [uri, suite, ...components] = words;
    if (uri && suite) out.push({ uri, suites: [suite], components });
  }
  return out;
}

/** Parse deb822 `.sources` text: blank-line separated stanzas of `Key: value` fields. */
export function parseDeb822Sources(text: string): AptSource[] {
  const out: AptSource[] = [];
  const stanzas = text.split(/\n\s*\n/);
  for (const stanza of stanzas) {
    const fields = new Map<string, string>();
    let last: string | undefined;
    for (const raw of stanza.split("\n")) {
      if (raw.startsWith("#")) continue;
      if (/^\s/.test(raw) && last !== undefined) {
        // Continuation line (e.g. an inline Signed-By key block).
        fields.set(last, `${fields.get(last) ?? ""} ${raw.trim()}`);
        continue;
      }
      const m = /^([A-Za-z0-9-]+):\s*(.*)$/.exec(raw);
      if (!m || m[1] === undefined) continue;
      last = m[1].toLowerCase();
      fields.set(last, (m[2] ?? "").trim());
    }
    const words = (key: string) => (fields.get(key) ?? "").split(/\s+/).filter((w) => w !== "");
    if (!words("types").includes("deb")) continue;
    if ((fields.get("enabled") ?? "yes").toLowerCase() === "no") continue;
    const suites = words("suites");
    const components = words("components");
    for (const uri of words("uris")) out.push({ uri, suites, components });
  }
  return out;
}

/** Read every source apt itself would read (sources.list plus `*.list` / `*.sources` in sources.list.d). */
export async function readAptSources(etcApt = "/etc/apt"): Promise<AptSource[]> {
  const out: AptSource[] = [];
  const main = await readFile(join(etcApt, "sources.list"), "utf8").catch(() => "");
  out.push(...parseSourcesList(main));
  const dir = join(etcApt, "sources.list.d");
  const names = (await readdir(dir).catch(() => [] as string[])).sort();
  for (const name of names) {
    // apt ignores other suffixes too (e.g. `.disabled`), so must we.
    if (name.endsWith(".list")) out.push(...parseSourcesList(await readFile(join(dir, name), "utf8")));
    else if (name.endsWith(".sources")) out.push(...parseDeb822Sources(await readFile(join(dir, name), "utf8")));
  }
  return out;
}

/** The mirror serving `suite` with the `main` component; throws `no_mirror` when there is none. */
export function findDebianMirror(sources: AptSource[], suite: string): string {
  const hit = sources.find((s) => s.suites.includes(suite) && s.components.includes("main"));
  if (!hit) throw new BurrowError(Code.FailedPrecondition, `no apt source serves "${suite} main"`, { reason: "no_mirror" });
  return hit.uri;
}

/**
 * The sources the template itself should use: every configured source for `suite` and its
 * `-updates` / `-security` companions, so `apt-get install` works inside a sandbox.
 */
export function sourcesForSuite(sources: AptSource[], suite: string): AptSource[] {
  const wanted = new Set([suite, `${suite}-updates`, `${suite}-security`]);
  return sources
    .map((s) => ({ ...s, suites: s.suites.filter((x) => wanted.has(x)) }))
    .filter((s) => s.suites.length > 0 && s.components.includes("main"));
}

/** Render sources as one-line `sources.list` text. */
export function renderSourcesList(sources: AptSource[]): string {
  const lines: string[] = [];
  for (const s of sources) for (const suite of s.suites) lines.push(`deb ${s.uri} ${suite} ${s.components.join(" ")}`);
  return `${lines.join("\n")}\n`;
}
