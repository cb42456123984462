// Where the sandbox and template commands connect: the API URLs and key from the resolved config, the key read
// from the state directory when none was given.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Code } from "@burrow/protocol";
import { CliError } from "./cli-error.js";
import { type CliConfig, type Env, resolveCliConfig } from "./config.js";

/** Options the e2b SDK takes as they are (ConnectionOpts), and what the plain REST calls need. */
export interface Connection {
  readonly apiUrl: string;
  readonly sandboxUrl: string;
  readonly apiKey: string;
}

export function resolveConnection(config: CliConfig): Connection {
  let apiKey = config.apiKey;
  if (apiKey === null) {
    const keyFile = join(config.stateDir, "api-key");
    try {
      apiKey = readFileSync(keyFile, "utf8").trim();
    } catch {
      throw new CliError(Code.Unauthenticated, `no API key: set E2B_API_KEY, or run 'burrow up' first so that ${keyFile} exists`, {
        reason: "no_api_key",
      });
    }
  }
  return Object.freeze({ apiUrl: config.apiUrl, sandboxUrl: config.sandboxUrl, apiKey });
}

/** The connection of the sandbox and template commands, which take no config flags. */
export function clientConnection(env: Env): Connection {
  return resolveConnection(resolveCliConfig({}, env));
}
