export { registerBusApi, type BusApiOptions } from "./register-bus-api.js";
export type { QueueApiDefaults } from "./queue-routes.js";
export type { SandboxBusServices } from "./trigger-routes.js";
