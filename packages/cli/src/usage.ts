import { TEMPLATE_USAGE } from "./commands/template/index.js";

export const USAGE = `burrow — self-hosted, E2B-compatible sandboxes for AI agents

Usage:
  burrow up [--port 3000] [--host 127.0.0.1] [--state-dir /var/lib/burrow] [--pool-size N]
            [--instance main] [--subnet 10.213.0.0/16] [--domain localhost:3000]
            [--bus embedded|nats://HOST:4222]
  burrow down [--state-dir DIR] [--instance main] [--subnet CIDR]   (kill all sandboxes, remove network and cgroups)
  burrow sandbox create [--template base] [--timeout SECONDS] [--metadata k=v ...] [--env K=V ...] [--no-internet]
  burrow sandbox list [--state running,paused] [--metadata k=v ...]
  burrow sandbox kill ID...
  burrow sandbox exec ID [--user U] [--cwd DIR] [--timeout SECONDS] -- COMMAND...
  burrow sandbox shell ID [--user U]
  burrow sandbox pause ID...                 (memory and processes kept; no timeout while paused)
  burrow sandbox resume ID... [--timeout SECONDS]
${TEMPLATE_USAGE}
Every sandbox command takes --json for machine-readable output.
Connection: E2B_API_URL (default http://localhost:3000), E2B_SANDBOX_URL (default: the API URL),
E2B_API_KEY (default: the key in <state-dir>/api-key).
`;
