// Schema history of burrow.db. Append only: a released migration is never edited, because PRAGMA user_version
// records how far a database has come.
export const MIGRATIONS: readonly string[] = [
  `CREATE TABLE api_keys (
     id          INTEGER PRIMARY KEY,
     hash        TEXT NOT NULL UNIQUE,      -- sha256 hex of the key; the plaintext is never stored
     prefix      TEXT NOT NULL,             -- first characters, for display only
     created_at  INTEGER NOT NULL           -- unix ms
   );
   CREATE TABLE sandboxes (
     sandbox_id             TEXT PRIMARY KEY,
     template_id            TEXT NOT NULL,
     alias                  TEXT,
     client_id              TEXT NOT NULL,
     metadata               TEXT NOT NULL,  -- JSON object of strings
     cpu_count              INTEGER NOT NULL,
     memory_mb              INTEGER NOT NULL,
     disk_mb                INTEGER NOT NULL,
     started_at             INTEGER NOT NULL, -- unix ms
     end_at                 INTEGER NOT NULL, -- unix ms; the sandbox is killed then
     state                  TEXT NOT NULL,    -- running | paused
     envd_version           TEXT NOT NULL,
     envd_access_token      TEXT NOT NULL,    -- needed to route signed URLs; envVars are deliberately not kept
     allow_internet_access  INTEGER NOT NULL,
     api_key_id             INTEGER REFERENCES api_keys(id) ON DELETE SET NULL
   );
   CREATE INDEX sandboxes_started ON sandboxes (started_at DESC, sandbox_id DESC);`,
  // When a paused sandbox was paused (unix ms; NULL while running): paused sandboxes expire after a maximum time.
  `ALTER TABLE sandboxes ADD COLUMN paused_at INTEGER;`,
  // Names of the MCP servers a create asked for (JSON array; NULL for none). Their configs hold credentials and
  // are passed to the sandbox by the SDK itself, so only the names are kept.
  `ALTER TABLE sandboxes ADD COLUMN mcp_servers TEXT;`,
  // E2B's lifecycle chosen at create (autoPause, autoPauseMemory, autoResume.enabled), which connect never changes;
  // the create's timeout, which an auto-resume restarts; and how a paused sandbox is paused (memory | filesystem;
  // NULL while running), which the orchestrator may change on its own (a memory pause converted to a filesystem one).
  `ALTER TABLE sandboxes ADD COLUMN auto_pause INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE sandboxes ADD COLUMN auto_pause_memory INTEGER NOT NULL DEFAULT 1;
   ALTER TABLE sandboxes ADD COLUMN auto_resume INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE sandboxes ADD COLUMN timeout_sec INTEGER;
   ALTER TABLE sandboxes ADD COLUMN pause_kind TEXT;`,
  // E2B's network config of a sandbox (JSON: allowOut, denyOut, allowPublicTraffic, maskRequestHost, the traffic
  // token), kept for GET and the gateway; the orchestrator's record keeps what its firewall enforces.
  `CREATE TABLE sandbox_networks (
     sandbox_id  TEXT PRIMARY KEY REFERENCES sandboxes(sandbox_id) ON DELETE CASCADE,
     config      TEXT NOT NULL
   );`,
  // Secrets (E2B's /secrets): values sealed with AES-256-GCM under <stateDir>/secrets.key (secrets/secret-cipher.ts),
  // never stored in plaintext; names are unique per owner (the API key that created them).
  `CREATE TABLE secrets (
     seq           INTEGER PRIMARY KEY,     -- insertion order, the list's cursor
     secret_id     TEXT NOT NULL UNIQUE,    -- sec_<random>
     owner_key_id  INTEGER NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
     name          TEXT NOT NULL,           -- lower-cased
     metadata      TEXT NOT NULL,           -- JSON object of strings
     version       INTEGER NOT NULL,
     sealed_value  BLOB NOT NULL,           -- format byte, nonce, tag, ciphertext
     created_at    INTEGER NOT NULL,        -- unix ms
     updated_at    INTEGER NOT NULL
   );
   CREATE UNIQUE INDEX secrets_owner_name ON secrets (owner_key_id, name);`,
  // Teams (teams/): every key belongs to one; sandboxes belong to their key's team, other resources (templates,
  // snapshots, checkpoints) to the team recorded in resource_owners. Keys get a public id (E2B's uuid), a name and a
  // role, and are revoked by marking them (revoked_at), so that what they created keeps its team. The default team
  // and the instance admin key are set at start (teams/team-services.ts), not here.
  `CREATE TABLE teams (
     team_id     TEXT PRIMARY KEY,          -- uuid
     name        TEXT NOT NULL UNIQUE,
     quotas      TEXT NOT NULL DEFAULT '{}', -- JSON: per-team overrides of the configured quota defaults
     created_at  INTEGER NOT NULL           -- unix ms
   );
   ALTER TABLE api_keys ADD COLUMN team_id TEXT REFERENCES teams(team_id);
   ALTER TABLE api_keys ADD COLUMN public_id TEXT;
   ALTER TABLE api_keys ADD COLUMN name TEXT NOT NULL DEFAULT '';
   ALTER TABLE api_keys ADD COLUMN role TEXT NOT NULL DEFAULT 'member';  -- member | admin | instance_admin
   ALTER TABLE api_keys ADD COLUMN value_length INTEGER;
   ALTER TABLE api_keys ADD COLUMN suffix TEXT;                            -- last characters, for E2B's mask
   ALTER TABLE api_keys ADD COLUMN revoked_at INTEGER;
   ALTER TABLE api_keys ADD COLUMN last_used INTEGER;
   UPDATE api_keys SET public_id = lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2)
     || '-a' || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)));
   CREATE UNIQUE INDEX api_keys_public_id ON api_keys (public_id);
   CREATE TABLE resource_owners (
     kind         TEXT NOT NULL,            -- template | snapshot | checkpoint
     resource_id  TEXT NOT NULL,
     team_id      TEXT NOT NULL REFERENCES teams(team_id),
     created_at   INTEGER NOT NULL,
     PRIMARY KEY (kind, resource_id)
   );
   CREATE TABLE audit_log (
     seq            INTEGER PRIMARY KEY,
     at             INTEGER NOT NULL,       -- unix ms
     team_id        TEXT,
     key_id         TEXT,                   -- the key's public id
     action         TEXT NOT NULL,          -- create | kill | pause | resume | build | delete | …
     resource_kind  TEXT NOT NULL,
     resource_id    TEXT NOT NULL,
     detail         TEXT                    -- JSON, optional
   );
   CREATE INDEX audit_log_team ON audit_log (team_id, seq);`,
  // The model gateway (models/): providers (a literal key sealed like a secret, or a secret's name), one settings row
  // (JSON), and usage per sandbox ("" for host callers), API key (0 for none) and model.
  `CREATE TABLE model_providers (
     name          TEXT PRIMARY KEY,
     kind          TEXT NOT NULL,           -- openai | anthropic
     base_url      TEXT NOT NULL,
     key_source    TEXT NOT NULL,           -- none | literal | secret
     key_sealed    BLOB,
     key_secret    TEXT,
     models        TEXT NOT NULL,           -- JSON array
     priority      INTEGER NOT NULL,
     weight        INTEGER NOT NULL,
     owner_key_id  INTEGER NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
     created_at    INTEGER NOT NULL
   );
   CREATE TABLE model_settings (
     id        INTEGER PRIMARY KEY CHECK (id = 1),
     settings  TEXT NOT NULL
   );
   CREATE TABLE model_usage (
     subject        TEXT NOT NULL,
     api_key_id     INTEGER NOT NULL,
     model          TEXT NOT NULL,
     requests       INTEGER NOT NULL,
     input_tokens   INTEGER NOT NULL,
     output_tokens  INTEGER NOT NULL,
     PRIMARY KEY (subject, api_key_id, model)
   );`,
  // Volumes (E2B's /volumes): a volume's files live with the orchestrator; its token is derived from token_salt under
  // <stateDir>/volume-tokens.key and never stored (volumes/volume-tokens.ts). sandbox_volumes says which sandboxes
  // (running or paused) mount which volume, and goes with the sandbox's row.
  `CREATE TABLE volumes (
     volume_id   TEXT PRIMARY KEY,
     name        TEXT NOT NULL UNIQUE,
     size_mb     INTEGER NOT NULL,
     token_salt  TEXT NOT NULL,
     api_key_id  INTEGER REFERENCES api_keys(id) ON DELETE SET NULL,
     created_at  INTEGER NOT NULL           -- unix ms
   );
   CREATE TABLE sandbox_volumes (
     sandbox_id  TEXT NOT NULL REFERENCES sandboxes(sandbox_id) ON DELETE CASCADE,
     volume_id   TEXT NOT NULL REFERENCES volumes(volume_id),
     path        TEXT NOT NULL,
     position    INTEGER NOT NULL,
     PRIMARY KEY (sandbox_id, path)
   );
   CREATE INDEX sandbox_volumes_volume ON sandbox_volumes (volume_id);`,
  // Teams' metrics (GET /teams/{id}/metrics), a sample per active team every few seconds, kept for a bounded time
  // (teams/team-metrics.ts).
  `CREATE TABLE team_metric_samples (
     team_id     TEXT NOT NULL,
     ts          INTEGER NOT NULL,          -- unix seconds
     concurrent  INTEGER NOT NULL,
     start_rate  REAL NOT NULL,             -- sandboxes started per second over the interval before ts
     PRIMARY KEY (team_id, ts)
   ) WITHOUT ROWID;
   CREATE INDEX team_metric_samples_ts ON team_metric_samples (ts);`,
  // Volume names are unique per team (E2B's behaviour), not per server: volumes get the team that owns them (their
  // creating key's; rows of an unknown key go to the default team, '' when no team exists yet, adopted at start by
  // volumes/volume-service.ts) and UNIQUE (team_id, name). SQLite cannot drop a column's UNIQUE, so both tables are
  // rebuilt, sandbox_volumes first (it references volumes), and renamed into place.
  `CREATE TABLE volumes_v2 (
     volume_id   TEXT PRIMARY KEY,
     team_id     TEXT NOT NULL,
     name        TEXT NOT NULL,
     size_mb     INTEGER NOT NULL,
     token_salt  TEXT NOT NULL,
     api_key_id  INTEGER REFERENCES api_keys(id) ON DELETE SET NULL,
     created_at  INTEGER NOT NULL,          -- unix ms
     UNIQUE (team_id, name)
   );
   INSERT INTO volumes_v2 (volume_id, team_id, name, size_mb, token_salt, api_key_id, created_at)
     SELECT v.volume_id,
            COALESCE((SELECT k.team_id FROM api_keys k WHERE k.id = v.api_key_id),
                     (SELECT t.team_id FROM teams t WHERE t.name = 'default'),
                     (SELECT t.team_id FROM teams t ORDER BY t.created_at, t.name LIMIT 1),
                     ''),
            v.name, v.size_mb, v.token_salt, v.api_key_id, v.created_at
       FROM volumes v;
   CREATE TABLE sandbox_volumes_v2 (
     sandbox_id  TEXT NOT NULL REFERENCES sandboxes(sandbox_id) ON DELETE CASCADE,
     volume_id   TEXT NOT NULL REFERENCES volumes_v2(volume_id),
     path        TEXT NOT NULL,
     position    INTEGER NOT NULL,
     PRIMARY KEY (sandbox_id, path)
   );
   INSERT INTO sandbox_volumes_v2 (sandbox_id, volume_id, path, position) SELECT sandbox_id, volume_id, path, position FROM sandbox_volumes;
   DROP TABLE sandbox_volumes;
   DROP TABLE volumes;
   ALTER TABLE volumes_v2 RENAME TO volumes;
   ALTER TABLE sandbox_volumes_v2 RENAME TO sandbox_volumes;
   CREATE INDEX sandbox_volumes_volume ON sandbox_volumes (volume_id);`,
  // The egress part of a sandbox's network config as it was when a snapshot or checkpoint was taken of it, by the
  // snapshot's template id or the checkpoint's id: sandboxes started from it get it whole (store/sandbox-networks.ts).
  `CREATE TABLE network_copies (
     source_id  TEXT PRIMARY KEY,
     config     TEXT NOT NULL            -- JSON: allowOut, denyOut, rules, rulesOwner, egressProxy
   );`,
  // Deleted teams (DELETE /burrow/v1/teams/{id}) keep their row, since their revoked keys and the audit log still name
  // them; deleted_at hides them and their name is freed (teams/team-store.ts).
  `ALTER TABLE teams ADD COLUMN deleted_at INTEGER;`,
];
