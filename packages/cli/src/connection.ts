// Where the CLI's sandbox commands connect: the same variables the official SDK reads, with local defaults.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_STATE_DIR } from "@burrow/orchestrator";
import { CliError } from "./cli-error.js";

export interface Connection {
  apiUrl: string;
  sandboxUrl: string;
  apiKey: string;
}

export function resolveConnection(env: NodeJS.ProcessEnv = process.env): Connection {
  const apiUrl = env.E2B_API_URL ?? "http://localhost:3000";
  const sandboxUrl = env.E2B_SANDBOX_URL ?? apiUrl;
  let apiKey = env.E2B_API_KEY;
  if (!apiKey) {
    const keyFile = join(env.BURROW_STATE_DIR ?? DEFAULT_STATE_DIR, "api-key");
    try {
      apiKey = readFileSync(keyFile, "utf8").trim();
    } catch {
      throw new CliError(`no API key: set E2B_API_KEY, or run 'burrow up' first so that ${keyFile} exists`);
    }
  }
  return { apiUrl, sandboxUrl, apiKey };
}
