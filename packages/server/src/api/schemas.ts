// JSON schemas of E2B's REST shapes. Fastify validates requests and serializes responses
// with them, and they double as the API's documentation; field names are E2B's, exactly.
declare module "fastify" {
  /** Documentation fields (as @fastify/swagger reads them); fastify itself ignores them. */
  interface FastifySchema {
    summary?: string;
    description?: string;
    hide?: boolean;
  }
}

const stringMap = { type: "object", additionalProperties: { type: "string" } } as const;

export const errorSchema = {
  $id: "Error",
  type: "object",
  required: ["code", "message"],
  properties: { code: { type: "integer" }, message: { type: "string" } },
} as const;

export const sandboxSchema = {
  $id: "Sandbox",
  type: "object",
  required: ["sandboxID", "templateID", "clientID", "envdVersion"],
  properties: {
    sandboxID: { type: "string" },
    templateID: { type: "string" },
    alias: { type: "string" },
    clientID: { type: "string", description: "Deprecated; always the node name." },
    envdVersion: { type: "string" },
    envdAccessToken: { type: "string", description: "X-Access-Token for envd; also the key of signed file URLs." },
    trafficAccessToken: { type: ["string", "null"] },
    domain: { type: ["string", "null"] },
  },
} as const;

const listedProperties = {
  sandboxID: { type: "string" },
  templateID: { type: "string" },
  alias: { type: "string" },
  clientID: { type: "string" },
  cpuCount: { type: "integer" },
  memoryMB: { type: "integer" },
  diskSizeMB: { type: "integer" },
  startedAt: { type: "string", format: "date-time" },
  endAt: { type: "string", format: "date-time" },
  state: { type: "string", enum: ["running", "paused"] },
  envdVersion: { type: "string" },
  metadata: stringMap,
  volumeMounts: { type: "array", items: { type: "object", required: ["name", "path"], properties: { name: { type: "string" }, path: { type: "string" } } } },
} as const;

const listedRequired = [
  "sandboxID", "templateID", "clientID", "cpuCount", "memoryMB", "diskSizeMB", "startedAt", "endAt", "state", "envdVersion",
] as const;

export const listedSandboxSchema = {
  $id: "ListedSandbox",
  type: "object",
  required: listedRequired,
  properties: listedProperties,
} as const;

export const sandboxDetailSchema = {
  $id: "SandboxDetail",
  type: "object",
  required: listedRequired,
  properties: {
    ...listedProperties,
    domain: { type: ["string", "null"] },
    envdAccessToken: { type: "string" },
    allowInternetAccess: { type: ["boolean", "null"] },
    network: {
      type: "object",
      properties: {
        allowOut: { type: "array", items: { type: "string" } },
        denyOut: { type: "array", items: { type: "string" } },
        allowPublicTraffic: { type: "boolean" },
        maskRequestHost: { type: "string" },
        httpsPorts: { type: "array", items: { type: "integer" } },
        rules: { type: "object", additionalProperties: true },
        egressProxy: { type: "object", properties: { address: { type: "string" }, username: { type: "string" } } },
      },
    },
    lifecycle: {
      type: "object",
      required: ["onTimeout", "autoResume"],
      properties: { onTimeout: { type: "string", enum: ["kill", "pause"] }, autoResume: { type: "boolean" } },
    },
  },
} as const;

export const sandboxMetricSchema = {
  $id: "SandboxMetric",
  type: "object",
  required: ["timestamp", "timestampUnix", "cpuCount", "cpuUsedPct", "memUsed", "memTotal", "memCache", "diskUsed", "diskTotal"],
  properties: {
    timestamp: { type: "string", format: "date-time" },
    timestampUnix: { type: "integer" },
    cpuCount: { type: "integer" },
    cpuUsedPct: { type: "number" },
    memUsed: { type: "integer", description: "bytes" },
    memTotal: { type: "integer", description: "bytes" },
    memCache: { type: "integer", description: "bytes" },
    diskUsed: { type: "integer", description: "bytes" },
    diskTotal: { type: "integer", description: "bytes" },
  },
} as const;

/** Body of POST /v2/sandboxes (NewSandboxV2) and of the legacy POST /sandboxes (adds `secure`). */
export const newSandboxSchema = {
  type: "object",
  required: ["templateID"],
  properties: {
    templateID: { type: "string", minLength: 1 },
    timeout: { type: "integer", minimum: 0, description: "seconds; default 300" },
    metadata: stringMap,
    envVars: stringMap,
    allow_internet_access: { type: "boolean" },
    secure: { type: "boolean", description: "legacy; every sandbox is secured" },
    mcp: { type: ["object", "null"] },
    network: {
      type: "object",
      properties: {
        allowOut: { type: "array", items: { type: "string" } },
        denyOut: { type: "array", items: { type: "string" } },
        allowPublicTraffic: { type: "boolean" },
        maskRequestHost: { type: "string" },
        httpsPorts: { type: "array", items: { type: "integer" } },
        rules: { type: "object" },
        egressProxy: { type: ["object", "null"] },
      },
    },
    iam: { type: "object" },
    autoPause: { type: "boolean", description: "pause instead of kill at the timeout (SDK lifecycle.onTimeout 'pause')" },
    autoPauseMemory: { type: "boolean", description: "with autoPause: keep memory (default) or pause filesystem-only" },
    autoResume: {
      type: "object",
      required: ["enabled"],
      properties: { enabled: { type: "boolean", description: "the first request routed to the paused sandbox resumes it" } },
    },
    volumeMounts: { type: "array", items: { type: "object" } },
  },
} as const;

/** Body of PUT /sandboxes/{id}/network (SandboxNetworkUpdateConfig). */
export const networkUpdateSchema = {
  type: "object",
  properties: {
    allowOut: { type: "array", items: { type: "string" } },
    denyOut: { type: "array", items: { type: "string" } },
    allow_internet_access: { type: "boolean" },
    maskRequestHost: { type: "string" },
    rules: { type: "object" },
    egressProxy: { type: ["object", "null"] },
  },
} as const;

export const sandboxIdParams = {
  type: "object",
  required: ["sandboxID"],
  properties: { sandboxID: { type: "string" } },
} as const;

export const sharedSchemas = [errorSchema, sandboxSchema, listedSandboxSchema, sandboxDetailSchema, sandboxMetricSchema];

/** Response schema entry for an E2B error on the given statuses. */
export function errorResponses(...statuses: number[]): Record<number, { $ref: string }> {
  return Object.fromEntries(statuses.map((s) => [s, { $ref: "Error#" }]));
}
