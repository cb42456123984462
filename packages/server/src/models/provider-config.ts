// A model provider as the operator configures it under /burrow/v1/models/providers, and the checks on it. Base URLs
// follow each vendor's SDK: an OpenAI-compatible one ends where the SDK's does (`https://api.openai.com/v1`, the
// gateway appends `/chat/completions`), an Anthropic one is the API root (`https://api.anthropic.com`, the gateway
// appends `/v1/messages`).
import { BurrowError, Code } from "@burrow/protocol";

export type ProviderKind = "openai" | "anthropic";

/** The key as configured: a literal (stored sealed) or the name of a secret of the provider's owner. */
export type ProviderKeyInput = string | { secret: string };

export interface ProviderInput {
  name: string;
  kind: ProviderKind;
  baseUrl: string;
  apiKey?: ProviderKeyInput | null | undefined;
  models: string[];
  /** Lower is tried first. */
  priority: number;
  /** Share of traffic among providers of the same priority. */
  weight: number;
}

export interface Provider {
  name: string;
  kind: ProviderKind;
  baseUrl: string;
  /** How the key is held: none, a sealed literal, or a secret reference (resolved per request). */
  key: { source: "none" } | { source: "literal"; sealed: Buffer } | { source: "secret"; secret: string };
  models: string[];
  priority: number;
  weight: number;
  ownerKeyId: number;
  createdAt: Date;
}

function invalid(message: string): BurrowError {
  return new BurrowError(Code.InvalidArgument, message, { reason: "model_provider_invalid" });
}

const NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/;

export function checkProviderInput(input: ProviderInput): void {
  if (!NAME.test(input.name)) throw invalid(`provider name ${JSON.stringify(input.name)} must be 1-63 of a-z, 0-9, '.', '_', '-', starting with a letter or digit`);
  if (input.kind !== "openai" && input.kind !== "anthropic") throw invalid(`provider kind ${JSON.stringify(input.kind)} must be "openai" or "anthropic"`);
  let url: URL;
  try {
    url = new URL(input.baseUrl);
  } catch {
    throw invalid(`baseUrl ${JSON.stringify(input.baseUrl)} is not a URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw invalid(`baseUrl ${JSON.stringify(input.baseUrl)} must be http or https`);
  if (url.search || url.hash || url.username || url.password) throw invalid(`baseUrl ${JSON.stringify(input.baseUrl)} must not carry a query, fragment or credentials`);
  if (input.models.length === 0) throw invalid("models must name at least one model");
  for (const m of input.models) if (m.length === 0 || m.length > 200) throw invalid(`model name ${JSON.stringify(m)} must be 1-200 characters`);
  if (!Number.isInteger(input.priority) || input.priority < 0) throw invalid(`priority ${input.priority} must be a non-negative integer`);
  if (!Number.isInteger(input.weight) || input.weight < 1) throw invalid(`weight ${input.weight} must be a positive integer`);
  const key = input.apiKey;
  if (typeof key === "string" && key.length === 0) throw invalid("apiKey must not be empty (omit it for a provider without a key)");
  if (key && typeof key === "object" && (typeof key.secret !== "string" || key.secret.length === 0)) throw invalid("apiKey.secret must name a secret");
}

/** Whether the provider serves `model` (an entry "*" serves every model). */
export function servesModel(p: Provider, model: string): boolean {
  return p.models.includes(model) || p.models.includes("*");
}
