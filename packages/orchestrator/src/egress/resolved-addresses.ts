// Which addresses Burrow's resolver gave each sandbox, and for which names: what lets the egress proxy connect
// upstream while it still waits for a connection's request head or ClientHello (egress-proxy.ts). A sandbox that
// connects to an address it was given for a name its rules allow is almost always about to name that name; the
// proxy opens the upstream connection at once and sends nothing on it until the name the client sends has been
// judged like any other. The record only narrows what the proxy may open early to addresses the sandbox's own
// resolver answers named, so a sandbox cannot make the proxy open connections to addresses of its choosing.
// Keyed by the sandbox's address; entries outlive the answer's TTL a little (clients cache past it), and a reused
// address is harmless: the names are judged with the current sandbox's rules when used.

/** Entries are kept at least this long, whatever the answer's TTL (0 included). */
const MIN_KEEP_S = 60;
/** And at most this long. */
const MAX_KEEP_S = 300;
/** Addresses remembered per sandbox; the oldest go first. */
const MAX_PER_SANDBOX = 1024;
/** Expired entries are swept every this many notes. */
const SWEEP_EVERY = 256;

/** How long what the resolver answered is kept, for an answer with `ttlS`: the proxy's note and the direct path's pairs. */
export function keepSeconds(ttlS: number): number {
  return Math.min(MAX_KEEP_S, Math.max(MIN_KEEP_S, ttlS));
}

export class ResolvedAddresses {
  /** sandbox address → resolved address → name → expiry (ms since the epoch). */
  readonly #bySandbox = new Map<string, Map<string, Map<string, number>>>();
  #notes = 0;

  /** `sandbox` was given `addresses` for `name`, valid `ttlS` seconds. */
  note(sandbox: string, name: string, addresses: readonly string[], ttlS: number, now = Date.now()): void {
    if (addresses.length === 0) return;
    if (++this.#notes % SWEEP_EVERY === 0) this.#sweep(now);
    const expires = now + keepSeconds(ttlS) * 1000;
    let table = this.#bySandbox.get(sandbox);
    if (!table) this.#bySandbox.set(sandbox, (table = new Map()));
    for (const address of addresses) {
      let names = table.get(address);
      if (names) table.delete(address); // re-inserted: the newest last, so the oldest is evicted first
      else names = new Map();
      names.set(name, expires);
      table.set(address, names);
    }
    while (table.size > MAX_PER_SANDBOX) table.delete(table.keys().next().value!);
  }

  /** The names `sandbox` was given `address` for that have not expired. */
  namesOf(sandbox: string, address: string, now = Date.now()): string[] {
    const names = this.#bySandbox.get(sandbox)?.get(address);
    if (!names) return [];
    const out: string[] = [];
    for (const [name, expires] of names) if (expires > now) out.push(name);
    return out;
  }

  #sweep(now: number): void {
    for (const [sandbox, table] of this.#bySandbox) {
      for (const [address, names] of table) {
        for (const [name, expires] of names) if (expires <= now) names.delete(name);
        if (names.size === 0) table.delete(address);
      }
      if (table.size === 0) this.#bySandbox.delete(sandbox);
    }
  }
}
