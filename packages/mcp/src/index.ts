// Public surface of @burrow/mcp: Burrow's own MCP server (stdio and streamable HTTP) and where the in-sandbox MCP
// gateway's runtime files are.
export { createBurrowMcpServer, SERVER_INFO } from "./create-server.js";
export { createMcpHttpHandler, type McpHttpHandler, type McpHttpAuth } from "./http-handler.js";
export { serveStdio } from "./stdio.js";
export { BurrowSession } from "./session.js";
export type { BurrowConnection } from "./connection.js";
export { ToolError, toToolError, type ToolErrorCode } from "./tool-error.js";
export { mcpGatewayRuntimeFiles, GATEWAY_PROGRAM_NAME } from "./gateway-runtime-files.js";
