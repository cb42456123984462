// SQLite tables of the model gateway: providers, the settings row and usage per caller and model.
import type { Db } from "../store/database.js";
import { DEFAULT_GATEWAY_SETTINGS, type GatewaySettings } from "./gateway-settings.js";
import type { Provider, ProviderKind } from "./provider-config.js";

interface ProviderRaw {
  name: string;
  kind: string;
  base_url: string;
  key_source: string;
  key_sealed: Buffer | null;
  key_secret: string | null;
  models: string;
  priority: number;
  weight: number;
  owner_key_id: number;
  created_at: number;
}

function fromRaw(r: ProviderRaw): Provider {
  const key: Provider["key"] =
    r.key_source === "literal" && r.key_sealed
      ? { source: "literal", sealed: r.key_sealed }
      : r.key_source === "secret" && r.key_secret
        ? { source: "secret", secret: r.key_secret }
        : { source: "none" };
  return {
    name: r.name,
    kind: r.kind as ProviderKind,
    baseUrl: r.base_url,
    key,
    models: JSON.parse(r.models) as string[],
    priority: r.priority,
    weight: r.weight,
    ownerKeyId: r.owner_key_id,
    createdAt: new Date(r.created_at),
  };
}

export interface UsageRow {
  sandboxId: string | null;
  apiKeyId: number | null;
  model: string;
  requests: number;
  inputTokens: number;
  outputTokens: number;
}

/** Counts to add to one (sandbox, key, model) row. */
export interface UsageDelta {
  sandboxId: string | null;
  apiKeyId: number | null;
  model: string;
  requests: number;
  inputTokens: number;
  outputTokens: number;
}

export class ModelStore {
  readonly #db: Db;
  readonly #all;
  readonly #upsert;
  readonly #delete;
  readonly #getSettings;
  readonly #putSettings;
  readonly #addUsage;
  readonly #usageBySandbox;
  readonly #usageAll;

  constructor(db: Db) {
    this.#db = db;
    this.#all = db.prepare<[], ProviderRaw>("SELECT * FROM model_providers ORDER BY priority, name");
    this.#upsert = db.prepare<[string, string, string, string, Buffer | null, string | null, string, number, number, number, number]>(
      `INSERT INTO model_providers (name, kind, base_url, key_source, key_sealed, key_secret, models, priority, weight, owner_key_id, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (name) DO UPDATE SET kind = excluded.kind, base_url = excluded.base_url, key_source = excluded.key_source,
         key_sealed = excluded.key_sealed, key_secret = excluded.key_secret, models = excluded.models,
         priority = excluded.priority, weight = excluded.weight`,
    );
    this.#delete = db.prepare<[string]>("DELETE FROM model_providers WHERE name = ?");
    this.#getSettings = db.prepare<[], { settings: string }>("SELECT settings FROM model_settings WHERE id = 1");
    this.#putSettings = db.prepare<[string]>(
      "INSERT INTO model_settings (id, settings) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET settings = excluded.settings",
    );
    this.#addUsage = db.prepare<[string, number, string, number, number, number]>(
      `INSERT INTO model_usage (subject, api_key_id, model, requests, input_tokens, output_tokens) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (subject, api_key_id, model) DO UPDATE SET requests = requests + excluded.requests,
         input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens`,
    );
    this.#usageBySandbox = db.prepare<[string], UsageRaw>("SELECT * FROM model_usage WHERE subject = ? ORDER BY model");
    this.#usageAll = db.prepare<[], UsageRaw>("SELECT * FROM model_usage ORDER BY subject, model");
  }

  providers(): Provider[] {
    return this.#all.all().map(fromRaw);
  }

  put(p: Provider): void {
    const sealed = p.key.source === "literal" ? p.key.sealed : null;
    const secret = p.key.source === "secret" ? p.key.secret : null;
    this.#upsert.run(p.name, p.kind, p.baseUrl, p.key.source, sealed, secret, JSON.stringify(p.models), p.priority, p.weight, p.ownerKeyId, p.createdAt.getTime());
  }

  delete(name: string): boolean {
    return this.#delete.run(name).changes === 1;
  }

  settings(): GatewaySettings {
    const row = this.#getSettings.get();
    return row ? { ...DEFAULT_GATEWAY_SETTINGS, ...(JSON.parse(row.settings) as Partial<GatewaySettings>) } : { ...DEFAULT_GATEWAY_SETTINGS };
  }

  putSettings(s: GatewaySettings): void {
    this.#putSettings.run(JSON.stringify(s));
  }

  /** Add usage counts in one transaction; host callers (no sandbox) are recorded under their key with subject "". */
  addUsage(deltas: readonly UsageDelta[]): void {
    this.#db.transaction(() => {
      for (const d of deltas) this.#addUsage.run(d.sandboxId ?? "", d.apiKeyId ?? 0, d.model, d.requests, d.inputTokens, d.outputTokens);
    })();
  }

  usage(sandboxId?: string): UsageRow[] {
    const rows = sandboxId === undefined ? this.#usageAll.all() : this.#usageBySandbox.all(sandboxId);
    return rows.map((r) => ({
      sandboxId: r.subject === "" ? null : r.subject,
      apiKeyId: r.api_key_id === 0 ? null : r.api_key_id,
      model: r.model,
      requests: r.requests,
      inputTokens: r.input_tokens,
      outputTokens: r.output_tokens,
    }));
  }
}

interface UsageRaw {
  subject: string;
  api_key_id: number;
  model: string;
  requests: number;
  input_tokens: number;
  output_tokens: number;
}
