import { DEFAULT_USER } from "@burrow/protocol/constants";

/** Per-sandbox settings pushed by the orchestrator through POST /init. */
export class EnvdState {
  /** Sandbox env vars, applied to every process after the login defaults and before request envs. */
  readonly envVars = new Map<string, string>();
  accessToken: string | undefined;
  defaultUser = DEFAULT_USER;
  defaultWorkdir: string | undefined;
}
