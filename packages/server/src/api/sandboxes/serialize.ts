// Store rows → E2B wire shapes. Dates go out as RFC 3339 strings.
import type { SandboxMetricSample } from "@burrow/orchestrator";
import type { ServerConfig } from "../../config.js";
import { lifecycleView } from "../../lifecycle/sandbox-lifecycle.js";
import type { SandboxRow } from "../../store/sandboxes.js";

/** `network`: the sandbox's network config, whose traffic token (allowPublicTraffic false) the answer carries. */
export function toSandbox(row: SandboxRow, config: ServerConfig, network?: { trafficAccessToken?: string | undefined }) {
  return {
    sandboxID: row.sandboxId,
    templateID: row.templateId,
    ...(row.alias !== null ? { alias: row.alias } : {}),
    clientID: row.clientId,
    envdVersion: row.envdVersion,
    // Always issued: signed file URLs are routed by recomputing signatures with it.
    envdAccessToken: row.envdAccessToken,
    trafficAccessToken: network?.trafficAccessToken ?? null,
    domain: config.domain,
  };
}

export function toListedSandbox(row: SandboxRow) {
  return {
    sandboxID: row.sandboxId,
    templateID: row.templateId,
    ...(row.alias !== null ? { alias: row.alias } : {}),
    clientID: row.clientId,
    cpuCount: row.cpuCount,
    memoryMB: row.memoryMB,
    diskSizeMB: row.diskSizeMB,
    startedAt: row.startedAt.toISOString(),
    endAt: row.endAt.toISOString(),
    state: row.state,
    envdVersion: row.envdVersion,
    metadata: row.metadata,
  };
}

export function toSandboxDetail(row: SandboxRow, config: ServerConfig) {
  return {
    ...toListedSandbox(row),
    domain: config.domain,
    envdAccessToken: row.envdAccessToken,
    allowInternetAccess: row.allowInternetAccess,
    lifecycle: lifecycleView(row.lifecycle),
  };
}

export function toSandboxMetric(sample: SandboxMetricSample) {
  return {
    timestamp: sample.timestamp.toISOString(),
    timestampUnix: Math.floor(sample.timestamp.getTime() / 1000),
    cpuCount: sample.cpuCount,
    cpuUsedPct: sample.cpuUsedPct,
    memUsed: Math.round(sample.memUsed),
    memTotal: Math.round(sample.memTotal),
    memCache: Math.round(sample.memCache),
    diskUsed: Math.round(sample.diskUsed),
    diskTotal: Math.round(sample.diskTotal),
  };
}
