// Network configs of sandboxes (E2B's `network`, network.ts), one row per sandbox that asked for one; the row goes
// with its sandbox (ON DELETE CASCADE). The gateway reads ingress (traffic token, masked host) from here for every
// request to a sandbox port other than envd's.
//
// The egress part of a config is also kept with each snapshot and checkpoint taken of a sandbox that has one
// (network_copies, by the snapshot's template id or the checkpoint's id), so the sandboxes started from it get it
// whole (rules with header transforms, the user's proxy) after the source has ended or changed its rules.
import type { EgressConfig, SandboxNetworkConfig } from "../network/network-config.js";
import type { Db } from "./database.js";

export class SandboxNetworkStore {
  readonly #get;
  readonly #put;
  readonly #setInternet;
  readonly #getCopy;
  readonly #putCopy;
  readonly #dropCopy;
  readonly #copyIds;

  constructor(db: Db) {
    this.#get = db.prepare<[string], { config: string }>("SELECT config FROM sandbox_networks WHERE sandbox_id = ?");
    this.#put = db.prepare<[string, string]>(
      "INSERT INTO sandbox_networks (sandbox_id, config) VALUES (?, ?) ON CONFLICT (sandbox_id) DO UPDATE SET config = excluded.config",
    );
    this.#setInternet = db.prepare<[number, string]>("UPDATE sandboxes SET allow_internet_access = ? WHERE sandbox_id = ?");
    this.#getCopy = db.prepare<[string], { config: string }>("SELECT config FROM network_copies WHERE source_id = ?");
    this.#putCopy = db.prepare<[string, string]>(
      "INSERT INTO network_copies (source_id, config) VALUES (?, ?) ON CONFLICT (source_id) DO UPDATE SET config = excluded.config",
    );
    this.#dropCopy = db.prepare<[string]>("DELETE FROM network_copies WHERE source_id = ?");
    this.#copyIds = db.prepare<[], { source_id: string }>("SELECT source_id FROM network_copies");
  }

  get(sandboxId: string): SandboxNetworkConfig | undefined {
    const row = this.#get.get(sandboxId);
    return row ? (JSON.parse(row.config) as SandboxNetworkConfig) : undefined;
  }

  /**
   * Keep a sandbox's config and its allow_internet_access (a column of `sandboxes`, which GET and list read) in one
   * transaction. The sandbox's row must exist.
   */
  put(sandboxId: string, config: SandboxNetworkConfig, allowInternetAccess: boolean): void {
    this.#put.run(sandboxId, JSON.stringify(config));
    this.#setInternet.run(allowInternetAccess ? 1 : 0, sandboxId);
  }

  /** The egress kept with a snapshot (its template id) or checkpoint (its id) when it was taken; undefined for none. */
  copyOf(sourceId: string): EgressConfig | undefined {
    const row = this.#getCopy.get(sourceId);
    return row ? (JSON.parse(row.config) as EgressConfig) : undefined;
  }

  keepCopy(sourceId: string, egress: EgressConfig): void {
    this.#putCopy.run(sourceId, JSON.stringify(egress));
  }

  dropCopy(sourceId: string): void {
    this.#dropCopy.run(sourceId);
  }

  /** Ids of the snapshots and checkpoints an egress is kept for. */
  copyIds(): string[] {
    return this.#copyIds.all().map((row) => row.source_id);
  }
}
