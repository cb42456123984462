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
];
