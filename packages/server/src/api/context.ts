// What route handlers may use. Passed explicitly to each route module (no fastify decorators for services).
import type { Orchestrator } from "@burrow/orchestrator";
import type { Registry } from "prom-client";
import type { ServerConfig } from "../config.js";
import type { SandboxService } from "../lifecycle/sandbox-service.js";
import type { SandboxMetrics } from "../metrics/sandbox-metrics.js";
import type { ApiKeyStore } from "../store/api-keys.js";
import type { SandboxNetworkStore } from "../store/sandbox-networks.js";
import type { VolumeService } from "../volumes/volume-service.js";
import type { TeamServices } from "../teams/team-services.js";
import type { SecretService } from "../secrets/index.js";
import type { ModelGateway } from "../models/index.js";

export interface ApiContext {
  config: ServerConfig;
  sandboxes: SandboxService;
  sandboxMetrics: SandboxMetrics;
  orchestrator: Orchestrator;
  apiKeys: ApiKeyStore;
  /** Sandboxes' network configs (E2B's `network`). */
  networks: SandboxNetworkStore;
  /** E2B's secrets (write-only values, encrypted at rest). */
  secrets: SecretService;
  /** The model gateway (its configuration is served under /burrow/v1/models). */
  models: ModelGateway;
  /** Volumes (E2B's /volumes and the content API); their mounts at create. */
  volumes: VolumeService;
  registry: Registry;
  /** Teams, keys, ownership, quotas and audit (teams/). */
  teams: TeamServices;
}
