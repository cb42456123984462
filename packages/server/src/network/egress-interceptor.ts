// The server's side of header transforms at egress (the orchestrator's EgressInterceptor): which headers a sandbox's
// requests to a host get, with `${e2b.secrets.NAME}` resolved from the sandbox's rules' owner's secrets at the moment
// a connection starts (so an updated secret applies from the next connection), certificates from the egress CA, and
// the CAs upstream servers are verified against (the host's system store and BURROW_EGRESS_UPSTREAM_CA).
import { existsSync, readFileSync } from "node:fs";
import { rootCertificates } from "node:tls";
import type { EgressInterceptor, Orchestrator } from "@burrow/orchestrator";
import { BurrowError, Code } from "@burrow/protocol";
import type { ServerConfig } from "../config.js";
import type { SecretService } from "../secrets/index.js";
import type { SandboxNetworkStore } from "../store/sandbox-networks.js";
import { ensureEgressCa, type EgressCa } from "./egress-ca.js";
import { headersFor } from "./network-rules.js";

/** Debian's system trust store (ca-certificates). */
const SYSTEM_BUNDLE = "/etc/ssl/certs/ca-certificates.crt";

export function createEgressInterceptor(deps: {
  networks: Pick<SandboxNetworkStore, "get">;
  secrets: Pick<SecretService, "resolveSecretPlaceholders">;
  ca: EgressCa;
  /** Path of a PEM file of extra upstream CAs, or null. */
  upstreamCaFile: string | null;
}): EgressInterceptor {
  const upstreamCa = [existsSync(SYSTEM_BUNDLE) ? readFileSync(SYSTEM_BUNDLE, "utf8") : rootCertificates.join("\n")];
  if (deps.upstreamCaFile) upstreamCa.push(readUpstreamCa(deps.upstreamCaFile));
  return {
    upstreamCa,
    sandboxCaPem: deps.ca.certPem,
    certificateFor: (host) => deps.ca.certificateFor(host),
    async headersFor(sandboxId, host, port) {
      const config = deps.networks.get(sandboxId);
      const headers = headersFor(config?.rules, host, port);
      if (!headers || config?.rulesOwner === undefined) return undefined;
      const owner = { apiKeyId: config.rulesOwner };
      const resolved: Record<string, string> = {};
      for (const [name, value] of Object.entries(headers)) resolved[name] = deps.secrets.resolveSecretPlaceholders(value, owner);
      return resolved;
    },
  };
}

/**
 * Hand the orchestrator its interceptor (with the egress CA, created on first use) when it applies egress rules;
 * resolves the clean-up that takes it back.
 */
export async function startHeaderTransforms(
  orchestrator: Orchestrator,
  deps: {
    cfg: Pick<ServerConfig, "stateDir" | "egressUpstreamCa">;
    networks: Pick<SandboxNetworkStore, "get">;
    secrets: Pick<SecretService, "resolveSecretPlaceholders">;
    signal?: AbortSignal | undefined;
    /** The egress CA when the caller has it already (egressCaFor). */
    ca?: EgressCa | undefined;
  },
): Promise<() => void> {
  if (!orchestrator.setEgressInterceptor) return () => undefined;
  const ca = deps.ca ?? (await ensureEgressCa(deps.cfg.stateDir, { signal: deps.signal }));
  orchestrator.setEgressInterceptor(createEgressInterceptor({ networks: deps.networks, secrets: deps.secrets, ca, upstreamCaFile: deps.cfg.egressUpstreamCa }));
  return () => orchestrator.setEgressInterceptor?.(undefined);
}

/** The instance's egress CA (created on first use) when the orchestrator applies egress rules, else undefined. */
export async function egressCaFor(orchestrator: Orchestrator, stateDir: string, signal?: AbortSignal): Promise<EgressCa | undefined> {
  return orchestrator.setEgressInterceptor ? ensureEgressCa(stateDir, { signal }) : undefined;
}

function readUpstreamCa(file: string): string {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new BurrowError(Code.InvalidArgument, `BURROW_EGRESS_UPSTREAM_CA: cannot read ${file} (${(err as Error).message})`, { reason: "invalid_config" });
  }
  if (!text.includes("-----BEGIN CERTIFICATE-----")) {
    throw new BurrowError(Code.InvalidArgument, `BURROW_EGRESS_UPSTREAM_CA: ${file} holds no PEM certificate`, { reason: "invalid_config" });
  }
  return text;
}
