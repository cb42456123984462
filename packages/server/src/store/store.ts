// The store: one SQLite database with one class per table.
import { openDatabase, type Db } from "./database.js";
import { ApiKeyStore } from "./api-keys.js";
import { SandboxNetworkStore } from "./sandbox-networks.js";
import { SandboxStore } from "./sandboxes.js";
import { SecretStore } from "../secrets/secret-store.js";
import { ModelStore } from "../models/model-store.js";
import { VolumeStore } from "../volumes/volume-store.js";

export interface Store {
  /** The database itself, for modules that keep their own tables (teams/). */
  readonly db: Db;
  readonly apiKeys: ApiKeyStore;
  readonly sandboxes: SandboxStore;
  readonly networks: SandboxNetworkStore;
  readonly secrets: SecretStore;
  readonly models: ModelStore;
  readonly volumes: VolumeStore;
  close(): void;
}

export function openStore(stateDir: string): Store {
  const db: Db = openDatabase(stateDir);
  return {
    db,
    apiKeys: new ApiKeyStore(db),
    sandboxes: new SandboxStore(db),
    networks: new SandboxNetworkStore(db),
    secrets: new SecretStore(db),
    models: new ModelStore(db),
    volumes: new VolumeStore(db),
    close: () => {
      if (db.open) db.close();
    },
  };
}
