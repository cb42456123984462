// Providers as the REST API manages them: validated, literal keys sealed, secret references kept by name (resolved
// under the provider owner's secrets per request, so a rotated secret applies at once), answers without any key.
import { BurrowError, Code } from "@burrow/protocol";
import type { SecretService } from "../secrets/index.js";
import type { CircuitBreakers, CircuitState } from "./circuit-breaker.js";
import type { ModelStore } from "./model-store.js";
import { checkProviderInput, type Provider, type ProviderInput } from "./provider-config.js";

/** A provider as answered: the key only as where it comes from. */
export interface ProviderView {
  name: string;
  kind: Provider["kind"];
  baseUrl: string;
  apiKey: { source: "none" } | { source: "literal" } | { source: "secret"; secret: string };
  models: string[];
  priority: number;
  weight: number;
  circuit: CircuitState;
  createdAt: string;
}

const keyContext = (name: string) => `model-provider:${name}`;

export class ProviderRegistry {
  readonly #store: ModelStore;
  readonly #secrets: SecretService;
  readonly #breakers: CircuitBreakers;
  #cache: Provider[] | undefined;
  /**
   * Literal keys opened once per provider object (a save or removal makes new objects): opening one per request cost
   * a cipher set-up on every call. Secret references are still looked up per request, so a rotation applies at once.
   */
  readonly #opened = new WeakMap<Provider, string>();

  constructor(store: ModelStore, secrets: SecretService, breakers: CircuitBreakers) {
    this.#store = store;
    this.#secrets = secrets;
    this.#breakers = breakers;
  }

  /** Every provider (cached; the proxy reads this per request). */
  all(): Provider[] {
    return (this.#cache ??= this.#store.providers());
  }

  view(p: Provider): ProviderView {
    const apiKey: ProviderView["apiKey"] = p.key.source === "secret" ? { source: "secret", secret: p.key.secret } : { source: p.key.source };
    return { name: p.name, kind: p.kind, baseUrl: p.baseUrl, apiKey, models: p.models, priority: p.priority, weight: p.weight, circuit: this.#breakers.state(p.name), createdAt: p.createdAt.toISOString() };
  }

  get(name: string): Provider {
    const p = this.all().find((x) => x.name === name);
    if (!p) throw new BurrowError(Code.NotFound, `model provider ${JSON.stringify(name)} not found`, { reason: "model_provider_not_found" });
    return p;
  }

  create(input: ProviderInput, ownerKeyId: number): Provider {
    checkProviderInput(input);
    this.#checkSecretExists(input.apiKey, ownerKeyId);
    if (this.all().some((p) => p.name === input.name)) {
      throw new BurrowError(Code.AlreadyExists, `model provider ${JSON.stringify(input.name)} already exists`, { reason: "model_provider_exists" });
    }
    return this.#save(input, ownerKeyId, new Date());
  }

  /**
   * Fields sent replace the stored ones; `apiKey: null` removes the key. A new `{secret}` key names one of the
   * caller's secrets (`callerKeyId`: the key owning them), and is looked up among them from now on.
   */
  update(name: string, patch: Partial<Omit<ProviderInput, "name">>, callerKeyId: number): Provider {
    const current = this.get(name);
    const merged: ProviderInput = {
      name,
      kind: patch.kind ?? current.kind,
      baseUrl: patch.baseUrl ?? current.baseUrl,
      models: patch.models ?? current.models,
      priority: patch.priority ?? current.priority,
      weight: patch.weight ?? current.weight,
      apiKey: patch.apiKey,
    };
    checkProviderInput(merged);
    const newSecret = patch.apiKey !== null && typeof patch.apiKey === "object";
    this.#checkSecretExists(patch.apiKey, callerKeyId);
    const saved = this.#save(merged, newSecret ? callerKeyId : current.ownerKeyId, current.createdAt, patch.apiKey === undefined ? current.key : undefined);
    this.#breakers.forget(name);
    return saved;
  }

  remove(name: string): void {
    if (!this.#store.delete(name)) this.get(name);
    this.#cache = undefined;
    this.#breakers.forget(name);
  }

  /** The provider's key in plaintext for one upstream request; undefined for a provider without one. */
  resolveKey(p: Provider): string | undefined {
    if (p.key.source === "none") return undefined;
    if (p.key.source === "literal") {
      let key = this.#opened.get(p);
      if (key === undefined) this.#opened.set(p, (key = this.#secrets.openCredential(p.key.sealed, keyContext(p.name))));
      return key;
    }
    return this.#secrets.value({ apiKeyId: p.ownerKeyId }, p.key.secret);
  }

  /** A `{secret: NAME}` key must name a secret the caller has: a typo is a 400 now, not a failing provider later. */
  #checkSecretExists(key: ProviderInput["apiKey"], callerKeyId: number): void {
    if (!key || typeof key !== "object") return;
    if (!this.#secrets.hasName({ apiKeyId: callerKeyId }, key.secret)) {
      throw new BurrowError(Code.InvalidArgument, `apiKey.secret ${JSON.stringify(key.secret)} names no secret of this API key's team (create it with POST /secrets first)`, {
        reason: "model_provider_invalid",
      });
    }
  }

  #save(input: ProviderInput, ownerKeyId: number, createdAt: Date, keepKey?: Provider["key"]): Provider {
    const k = input.apiKey;
    const key: Provider["key"] =
      keepKey ??
      (typeof k === "string"
        ? { source: "literal", sealed: this.#secrets.sealCredential(k, keyContext(input.name)) }
        : k
          ? { source: "secret", secret: k.secret.toLowerCase() }
          : { source: "none" });
    const p: Provider = { name: input.name, kind: input.kind, baseUrl: input.baseUrl.replace(/\/+$/, ""), key, models: [...new Set(input.models)], priority: input.priority, weight: input.weight, ownerKeyId, createdAt };
    this.#store.put(p);
    this.#cache = undefined;
    return p;
  }
}
