// The gateway's configuration under /burrow/v1/models: providers (keys never answered), settings (timeouts, circuit
// breaker, budgets), usage per sandbox and model, and where the gateway listens.
import type { FastifyInstance } from "fastify";
import { errorResponses } from "../api/schemas.js";
import { ownerOf as secretOwnerOf } from "../api/secrets/index.js";
import { strictJsonBody } from "../api/strict-json.js";
import type { GatewaySettings } from "./gateway-settings.js";
import type { ModelGateway } from "./model-gateway.js";
import type { ProviderInput } from "./provider-config.js";

const keySchema = {
  anyOf: [
    { type: "string" },
    { type: "object", required: ["secret"], additionalProperties: false, properties: { secret: { type: "string" } } },
    { type: "null" },
  ],
} as const;

const providerFields = {
  kind: { type: "string", enum: ["openai", "anthropic"] },
  baseUrl: { type: "string" },
  apiKey: keySchema,
  models: { type: "array", items: { type: "string" }, maxItems: 1000 },
  priority: { type: "integer" },
  weight: { type: "integer" },
} as const;

const providerBody = {
  type: "object",
  required: ["name", "kind", "baseUrl", "models"],
  properties: { name: { type: "string" }, ...providerFields },
} as const;

const providerView = {
  type: "object",
  properties: {
    name: { type: "string" },
    kind: { type: "string" },
    baseUrl: { type: "string" },
    apiKey: { type: "object", properties: { source: { type: "string" }, secret: { type: "string" } } },
    models: { type: "array", items: { type: "string" } },
    priority: { type: "integer" },
    weight: { type: "integer" },
    circuit: { type: "string", enum: ["closed", "open", "half-open"] },
    createdAt: { type: "string" },
  },
} as const;

const budgetSchema = {
  anyOf: [
    {
      type: "object",
      required: ["windowSec"],
      additionalProperties: false,
      properties: { windowSec: { type: "integer" }, requests: { type: "integer" }, tokens: { type: "integer" } },
    },
    { type: "null" },
  ],
} as const;

const settingsSchema = {
  type: "object",
  properties: {
    attemptTimeoutMs: { type: "integer" },
    breakerFailures: { type: "integer" },
    breakerBackoffMs: { type: "integer" },
    sandboxBudget: budgetSchema,
    keyBudget: budgetSchema,
    providerHosts: { type: "array", items: { type: "string" } },
  },
} as const;

const nameParams = { type: "object", required: ["name"], properties: { name: { type: "string" } } } as const;

export function registerModelRoutes(app: FastifyInstance, gateway: ModelGateway, prefix = "/burrow/v1/models"): void {
  app.get(`${prefix}/providers`, { schema: { summary: "Model providers, by priority", response: { 200: { type: "array", items: providerView }, ...errorResponses(401) } } }, async () =>
    gateway.providers.all().map((p) => gateway.providers.view(p)),
  );

  app.post<{ Body: ProviderInput }>(
    `${prefix}/providers`,
    {
      preValidation: strictJsonBody,
      schema: { summary: "Add a model provider (apiKey: a literal, stored encrypted, or {secret: NAME})", body: providerBody, response: { 201: providerView, ...errorResponses(400, 401, 404, 409) } },
    },
    async (request, reply) => {
      const body = { ...request.body, priority: request.body.priority ?? 0, weight: request.body.weight ?? 1 };
      // The provider belongs to whoever owns the secrets it may name (the caller's team, as the secret routes say).
      const p = gateway.providers.create(body, secretOwnerOf(request).apiKeyId);
      return reply.code(201).send(gateway.providers.view(p));
    },
  );

  app.patch<{ Params: { name: string }; Body: Partial<Omit<ProviderInput, "name">> }>(
    `${prefix}/providers/:name`,
    {
      preValidation: strictJsonBody,
      schema: { summary: "Change a provider's fields (apiKey: null removes the key); its circuit closes", params: nameParams, body: { type: "object", properties: providerFields }, response: { 200: providerView, ...errorResponses(400, 401, 404) } },
    },
    async (request) => gateway.providers.view(gateway.providers.update(request.params.name, request.body ?? {}, secretOwnerOf(request).apiKeyId)),
  );

  app.delete<{ Params: { name: string } }>(
    `${prefix}/providers/:name`,
    { schema: { summary: "Remove a provider", params: nameParams, response: { 204: { type: "null" }, ...errorResponses(401, 404) } } },
    async (request, reply) => {
      gateway.providers.remove(request.params.name);
      return reply.code(204).send();
    },
  );

  app.get(`${prefix}/settings`, { schema: { summary: "Gateway settings", response: { 200: settingsSchema } } }, async () => gateway.settings());

  app.put<{ Body: Partial<GatewaySettings> }>(
    `${prefix}/settings`,
    { preValidation: strictJsonBody, schema: { summary: "Change gateway settings (fields left out keep their value); budget windows restart", body: settingsSchema, response: { 200: settingsSchema, ...errorResponses(400, 401) } } },
    async (request) => await gateway.setSettings({ ...gateway.settings(), ...request.body }),
  );

  app.get<{ Querystring: { sandboxID?: string } }>(
    `${prefix}/usage`,
    {
      schema: {
        summary: "Requests and tokens per sandbox (null: host callers) and model",
        querystring: { type: "object", properties: { sandboxID: { type: "string" } } },
        response: {
          200: {
            type: "array",
            items: {
              type: "object",
              properties: {
                sandboxID: { type: ["string", "null"] },
                model: { type: "string" },
                requests: { type: "integer" },
                inputTokens: { type: "integer" },
                outputTokens: { type: "integer" },
              },
            },
          },
        },
      },
    },
    async (request) => gateway.usage(request.query.sandboxID).map((u) => ({ sandboxID: u.sandboxId, model: u.model, requests: u.requests, inputTokens: u.inputTokens, outputTokens: u.outputTokens })),
  );

  app.get(
    `${prefix}/gateway`,
    {
      schema: {
        summary: "Where the model gateway listens: url for host clients (with an API key), sandboxUrl for sandboxes (no key; null when sandboxes cannot reach it)",
        response: { 200: { type: "object", properties: { url: { type: ["string", "null"] }, sandboxUrl: { type: ["string", "null"] } } } },
      },
    },
    async () => ({ url: gateway.url, sandboxUrl: gateway.sandboxUrl }),
  );
}
