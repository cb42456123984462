// What the orchestrator copies into the read-only runtime directory (mounted at /.burrow in every sandbox) for the
// mcp-gateway template: build.mjs bundles the gateway into dist/runtime/gateway.mjs.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** Directory name of the gateway inside the runtime directory (/.burrow/mcp-gateway). */
export const GATEWAY_PROGRAM_NAME = "mcp-gateway";

export interface RuntimeProgram {
  /** Directory name under the runtime mount. */
  name: string;
  /** Directory whose contents are copied there. */
  dir: string;
}

export function mcpGatewayRuntimeFiles(): RuntimeProgram {
  // src/ and dist/ both sit one level below the package root
  const pkgDir = dirname(dirname(fileURLToPath(import.meta.url)));
  return { name: GATEWAY_PROGRAM_NAME, dir: join(pkgDir, "dist", "runtime") };
}
