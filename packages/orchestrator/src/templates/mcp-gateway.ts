// The shipped mcp-gateway template, under the name the official SDK picks when a create has `mcp` and no template
// (`Sandbox.defaultMcpTemplate`): the base template plus an `mcp-gateway` command. The gateway itself is not in the
// template: it runs from the read-only runtime mount (/.burrow/mcp-gateway, with the runtime's node), so templates
// built on this one get a gateway that matches the server. Built the first time it is asked for.
import { RUNTIME_MOUNT } from "@burrow/protocol";
import { DEFAULT_LIMITS } from "../config.js";
import { runtimeNodeCommand } from "../rootfs/build-runtime-dir.js";
import type { BuildSpec } from "./builder/build-spec.js";
import type { BuildLogEntry } from "./builder/build-log.js";
import type { TemplateBuilder } from "./builder/template-builder.js";
import { ensureShippedTemplate, type ShippedTemplate, writeFilesStep } from "./shipped-template.js";
import type { TemplateManifest, TemplateStore } from "./template-store.js";

export const MCP_GATEWAY_TEMPLATE = "mcp-gateway";

/** Port the gateway serves on (the SDK's `mcpPort`). */
export const MCP_GATEWAY_PORT = 50005;

/** Version of this definition, kept in the template's ENV; a template built from another one is rebuilt. */
export const MCP_GATEWAY_VERSION_ENV = "BURROW_MCP_GATEWAY_TEMPLATE";
const MCP_GATEWAY_VERSION = "1";

/** Where the gateway bundle lies in the runtime mount. */
export const MCP_GATEWAY_BUNDLE = `${RUNTIME_MOUNT}/mcp-gateway/gateway.mjs`;
export const MCP_GATEWAY_COMMAND = "/usr/local/bin/mcp-gateway";
/** Holds a `node` that runs the runtime's node: last on MCP servers' PATH, so a template's own node wins. */
export const MCP_GATEWAY_NODE_DIR = "/usr/local/lib/mcp-gateway/bin";

function script(lines: string[]): string {
  return `#!/bin/sh\n${lines.join("\n")}\n`;
}

export function mcpGatewaySpec(): BuildSpec {
  const gateway = script([
    "# Burrow's MCP gateway (see 'mcp-gateway --help'), run by the sandbox runtime's node.",
    `export MCP_GATEWAY_SELF=${MCP_GATEWAY_COMMAND}`,
    `export MCP_GATEWAY_FALLBACK_PATH=${MCP_GATEWAY_NODE_DIR}`,
    `exec ${runtimeNodeCommand(MCP_GATEWAY_BUNDLE).join(" ")} "$@"`,
  ]);
  const node = script([
    "# The sandbox runtime's node, for MCP servers in templates without a node of their own.",
    `exec ${runtimeNodeCommand("").slice(0, -1).join(" ")} "$@"`,
  ]);
  return {
    fromTemplate: "base",
    force: false,
    steps: [
      writeFilesStep([
        { path: MCP_GATEWAY_COMMAND, content: gateway, mode: "0755" },
        { path: `${MCP_GATEWAY_NODE_DIR}/node`, content: node, mode: "0755" },
      ]),
      { type: "USER", args: ["user"], force: false },
      { type: "WORKDIR", args: ["/home/user"], force: false },
      { type: "ENV", args: [MCP_GATEWAY_VERSION_ENV, MCP_GATEWAY_VERSION], force: false },
    ],
  };
}

/** Built on first use like the other shipped templates, with base's default limits. */
export const MCP_GATEWAY: ShippedTemplate = {
  name: MCP_GATEWAY_TEMPLATE,
  aliases: [],
  versionEnv: MCP_GATEWAY_VERSION_ENV,
  version: MCP_GATEWAY_VERSION,
  limits: { cpuCount: DEFAULT_LIMITS.cpuCount, memoryMB: DEFAULT_LIMITS.memoryMB },
  spec: mcpGatewaySpec,
};

/** The mcp-gateway template, building it when missing or built from an older definition (see ensureShippedTemplate). */
export function ensureMcpGatewayTemplate(
  builder: TemplateBuilder,
  store: TemplateStore,
  opts: { onLog?: (entry: BuildLogEntry) => void; signal?: AbortSignal | undefined } = {},
): Promise<TemplateManifest> {
  return ensureShippedTemplate(builder, store, MCP_GATEWAY, opts);
}
