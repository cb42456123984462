export { createNetworkManager } from "./network-manager.js";
export type { AttachedEgress, BurrowNetworkManager, NetworkLogger, NetworkManagerOptions } from "./network-manager.js";
export type { HostServicePorts } from "./ruleset.js";
export { NetworkError } from "./network-error.js";
export type { NetworkErrorCode } from "./network-error.js";
export { netPlumbingArgs } from "./net-plumbing.js";
export type { NetPlumbing } from "./net-plumbing.js";
