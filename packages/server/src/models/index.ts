// The model gateway: provider failover, budgets and usage for model APIs (OpenAI-compatible and Anthropic).
export { MODEL_GATEWAY_HOST_SERVICE, ModelGateway, type ModelGatewayDeps, type ModelGatewayListen } from "./model-gateway.js";
export { ModelStore } from "./model-store.js";
export { registerModelRoutes } from "./model-routes.js";
export type { GatewaySettings, Budget } from "./gateway-settings.js";
export type { ProviderInput, ProviderKind } from "./provider-config.js";
