// JSON schemas of E2B's secret shapes (NewSecret, SecretUpdate, Secret), field names exactly as its SDK sends and reads them.
import { MAX_SECRET_PAGE } from "../../secrets/index.js";
import type { SecretInfo } from "../../secrets/index.js";

const metadataSchema = { type: "object", additionalProperties: { type: "string" } } as const;

export const newSecretSchema = {
  type: "object",
  required: ["name", "value"],
  properties: {
    name: { type: "string", description: "unique per owner; lower-cased before storage" },
    value: { type: "string", description: "write-only: never returned" },
    metadata: metadataSchema,
  },
} as const;

export const secretUpdateSchema = {
  type: "object",
  required: ["value"],
  properties: {
    value: { type: "string", description: "write-only: never returned" },
    metadata: { ...metadataSchema, description: "replaces the metadata when present; kept when absent" },
  },
} as const;

export const secretSchema = {
  type: "object",
  required: ["secretID", "name", "currentVersion", "metadata", "createdAt", "updatedAt"],
  properties: {
    secretID: { type: "string" },
    name: { type: "string" },
    currentVersion: { type: "integer" },
    metadata: metadataSchema,
    createdAt: { type: "string", format: "date-time" },
    updatedAt: { type: "string", format: "date-time" },
  },
} as const;

export const secretIdParams = {
  type: "object",
  required: ["secretID"],
  properties: { secretID: { type: "string", description: "secret id (sec_…) or name" } },
} as const;

export const secretListQuery = {
  type: "object",
  properties: {
    limit: { type: "integer", minimum: 1, maximum: MAX_SECRET_PAGE },
    nextToken: { type: "string" },
  },
} as const;

export function toSecret(info: SecretInfo) {
  return {
    secretID: info.secretId,
    name: info.name,
    currentVersion: info.version,
    metadata: info.metadata,
    createdAt: info.createdAt.toISOString(),
    updatedAt: info.updatedAt.toISOString(),
  };
}
