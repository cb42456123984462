// The constants alone: the package index also brings the generated protobuf code, which start-up does not need.
import { ENVD_PORT } from "@burrow/protocol/constants";
import { nativeAddon } from "./native/native-modules.js";

export interface EnvdConfig {
  /** @default 49983 (`ENVD_PORT`) */
  readonly port: number;
  /** @default "0.0.0.0" (`ENVD_HOST`) */
  readonly host: string;
  /** Secret the orchestrator presents on /init (`BURROW_ENVD_INIT_TOKEN`); undefined = upstream first-init rule. */
  readonly initToken: string | undefined;
}

/**
 * Reads envd's configuration from the environment and removes the init secret from `process.env`, so that no
 * child process (every command a user runs) can inherit it.
 */
export function resolveEnvdConfigFromEnv(env: NodeJS.ProcessEnv = process.env): EnvdConfig {
  const rawPort = env.ENVD_PORT ?? String(ENVD_PORT);
  const port = Number(rawPort);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`invalid ENVD_PORT '${rawPort}'`);
  const initToken = env.BURROW_ENVD_INIT_TOKEN || undefined;
  if (env.BURROW_ENVD_INIT_TOKEN !== undefined && env === process.env) {
    delete env.BURROW_ENVD_INIT_TOKEN;
    // deleting from process.env leaves the bytes in /proc/<envd>/environ, which sandbox root could read
    try {
      nativeAddon().scrubInitialEnv("BURROW_ENVD_INIT_TOKEN");
    } catch {
      // addon missing (development run): children still never inherit the variable
    }
  }
  delete env.BURROW_ENVD_INIT_TOKEN;
  return Object.freeze({ port, host: env.ENVD_HOST || "0.0.0.0", initToken });
}
