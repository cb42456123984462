// Gateway-wide settings (PUT /burrow/v1/models/settings): how long an attempt may wait for a provider's answer,
// when a provider's circuit opens and how long it stays open, the budgets of callers, and which real provider host
// names sandboxes' HTTPS to is answered by the gateway.
import { parseEgressTarget } from "@burrow/orchestrator";
import { BurrowError, Code } from "@burrow/protocol";

/** Requests and tokens (input + output) a caller may use per window; a limit left out is unlimited. */
export interface Budget {
  windowSec: number;
  requests?: number | undefined;
  tokens?: number | undefined;
}

export interface GatewaySettings {
  /** Time from sending a request to a provider until its response headers; past it the next provider is tried. */
  attemptTimeoutMs: number;
  /** Consecutive failures that open a provider's circuit. */
  breakerFailures: number;
  /** How long an open circuit refuses traffic before one trial request (doubles on each failed trial, to 10 min). */
  breakerBackoffMs: number;
  /** Per sandbox (callers identified by address). */
  sandboxBudget: Budget | null;
  /** Per API key: a host caller's own key, a sandbox's creating key. */
  keyBudget: Budget | null;
  /**
   * Provider host names (`api.openai.com`, `api.anthropic.com`) whose HTTPS from sandboxes the gateway answers:
   * Burrow's resolver gives sandboxes the gateway for them, and the gateway terminates their TLS with the instance's
   * egress CA (which sandboxes trust), so unmodified SDKs get failover, budgets and injected keys. Lower-case, unique.
   */
  providerHosts: string[];
}

export const DEFAULT_GATEWAY_SETTINGS: GatewaySettings = Object.freeze({
  attemptTimeoutMs: 60_000,
  breakerFailures: 5,
  breakerBackoffMs: 30_000,
  sandboxBudget: null,
  keyBudget: null,
  providerHosts: [],
});

const MAX_PROVIDER_HOSTS = 20;

function invalid(message: string): BurrowError {
  return new BurrowError(Code.InvalidArgument, message, { reason: "model_settings_invalid" });
}

function checkBudget(name: string, b: Budget | null): void {
  if (b === null) return;
  if (!Number.isInteger(b.windowSec) || b.windowSec < 1) throw invalid(`${name}.windowSec must be a positive integer`);
  for (const field of ["requests", "tokens"] as const) {
    const v = b[field];
    if (v !== undefined && (!Number.isInteger(v) || v < 0)) throw invalid(`${name}.${field} must be a non-negative integer`);
  }
}

export function checkGatewaySettings(s: GatewaySettings): void {
  if (!Number.isInteger(s.attemptTimeoutMs) || s.attemptTimeoutMs < 1) throw invalid("attemptTimeoutMs must be a positive integer");
  if (!Number.isInteger(s.breakerFailures) || s.breakerFailures < 1) throw invalid("breakerFailures must be a positive integer");
  if (!Number.isInteger(s.breakerBackoffMs) || s.breakerBackoffMs < 1) throw invalid("breakerBackoffMs must be a positive integer");
  checkBudget("sandboxBudget", s.sandboxBudget);
  checkBudget("keyBudget", s.keyBudget);
  if (s.providerHosts.length > MAX_PROVIDER_HOSTS) throw invalid(`providerHosts names ${s.providerHosts.length} hosts; at most ${MAX_PROVIDER_HOSTS}`);
  for (const host of s.providerHosts) {
    let target;
    try {
      target = parseEgressTarget(host);
    } catch {
      target = undefined;
    }
    if (target?.kind !== "domain" || target.wildcard || host !== target.domain) {
      throw invalid(`invalid providerHosts entry '${host}': expected a lower-case host name without wildcard or port`);
    }
  }
  if (new Set(s.providerHosts).size !== s.providerHosts.length) throw invalid("providerHosts names a host twice");
}
