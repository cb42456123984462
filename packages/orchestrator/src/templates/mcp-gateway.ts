// The shipped mcp-gateway template, under the name the official SDK picks when a create has `mcp` and no template
// (`Sandbox.defaultMcpTemplate`): the base template plus an `mcp-gateway` command. The gateway itself is not in the
// template: it runs from the read-only runtime mount (/.burrow/mcp-gateway, with the runtime's node), so templates
// built on this one get a gateway that matches the server. Built the first time it is asked for.
import { RUNTIME_MOUNT } from "@burrow/protocol";
import { runtimeNodeCommand } from "../rootfs/build-runtime-dir.js";
import type { BuildSpec } from "./builder/build-spec.js";
import type { BuildLogEntry } from "./builder/build-log.js";
import type { TemplateBuilder } from "./builder/template-builder.js";
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

export function isMcpGatewayTemplate(ref: string): boolean {
  return ref.split(":")[0] === MCP_GATEWAY_TEMPLATE;
}

function script(lines: string[]): string {
  return `#!/bin/sh\n${lines.join("\n")}\n`;
}

/** A RUN step that writes an executable file (base64, so no quoting can go wrong). */
function writeExecutable(path: string, content: string): string {
  const dir = path.slice(0, path.lastIndexOf("/"));
  return `mkdir -p ${dir} && echo ${Buffer.from(content).toString("base64")} | base64 -d > ${path} && chmod 0755 ${path}`;
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
      { type: "RUN", args: [`${writeExecutable(MCP_GATEWAY_COMMAND, gateway)} && ${writeExecutable(`${MCP_GATEWAY_NODE_DIR}/node`, node)}`, "root"], force: false },
      { type: "USER", args: ["user"], force: false },
      { type: "WORKDIR", args: ["/home/user"], force: false },
      { type: "ENV", args: [MCP_GATEWAY_VERSION_ENV, MCP_GATEWAY_VERSION], force: false },
    ],
  };
}

function isCurrent(manifest: TemplateManifest): boolean {
  return manifest.runtime?.env[MCP_GATEWAY_VERSION_ENV] === MCP_GATEWAY_VERSION;
}

/** Concurrent first uses share one build (per builder). */
const inFlight = new WeakMap<TemplateBuilder, Promise<TemplateManifest>>();

/** Wait for a shared build, giving up (without stopping it) when this caller's signal aborts. */
function waitFor<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/**
 * The mcp-gateway template, building it when missing or built from an older definition. The build is shared by
 * every caller and outlives any one of them (a caller that gives up stops waiting, not the build).
 */
export async function ensureMcpGatewayTemplate(
  builder: TemplateBuilder,
  store: TemplateStore,
  opts: { onLog?: (entry: BuildLogEntry) => void; signal?: AbortSignal | undefined } = {},
): Promise<TemplateManifest> {
  const existing = store.resolve(MCP_GATEWAY_TEMPLATE);
  if (existing && isCurrent(existing)) return existing;
  const running = inFlight.get(builder);
  if (running) return waitFor(running, opts.signal);
  const build = builder
    .buildAndWait(MCP_GATEWAY_TEMPLATE, mcpGatewaySpec(), opts.onLog ? { onLog: opts.onLog } : {})
    .finally(() => inFlight.delete(builder));
  build.catch(() => undefined);
  inFlight.set(builder, build);
  return waitFor(build, opts.signal);
}
