// Network configs of sandboxes (E2B's `network`, network.ts), one row per sandbox that asked for one; the row goes
// with its sandbox (ON DELETE CASCADE). The gateway reads ingress (traffic token, masked host) from here for every
// request to a sandbox port other than envd's.
import type { SandboxNetworkConfig } from "../network/network-config.js";
import type { Db } from "./database.js";

export class SandboxNetworkStore {
  readonly #get;
  readonly #put;
  readonly #setInternet;

  constructor(db: Db) {
    this.#get = db.prepare<[string], { config: string }>("SELECT config FROM sandbox_networks WHERE sandbox_id = ?");
    this.#put = db.prepare<[string, string]>(
      "INSERT INTO sandbox_networks (sandbox_id, config) VALUES (?, ?) ON CONFLICT (sandbox_id) DO UPDATE SET config = excluded.config",
    );
    this.#setInternet = db.prepare<[number, string]>("UPDATE sandboxes SET allow_internet_access = ? WHERE sandbox_id = ?");
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
}
