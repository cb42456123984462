// A running sandbox's envd, reached the way the gateway reaches it: through the upstream resolver, so that a driver
// that forwards ports (or a test stub) maps the server's own calls exactly as it maps the SDK's traffic.
import { ENVD_PORT, BurrowError, Code } from "@burrow/protocol";
import type { EnvdTarget } from "@burrow/orchestrator";
import type { UpstreamResolver } from "../gateway/gateway.js";
import type { SandboxService } from "../lifecycle/sandbox-service.js";
import type { SandboxRow } from "../store/sandboxes.js";

/** The sandbox's row and envd, or NotFound in the API's words when it is not running. */
export function liveEnvd(sandboxes: SandboxService, upstream: UpstreamResolver, sandboxId: string): { row: SandboxRow; envd: EnvdTarget } {
  const live = sandboxes.live(sandboxId);
  if (!live) throw new BurrowError(Code.NotFound, `sandbox "${sandboxId}" doesn't exist or is not running`);
  const { host, port } = upstream(live.record, ENVD_PORT);
  return { row: live.row, envd: { host, port, accessToken: live.row.envdAccessToken } };
}
