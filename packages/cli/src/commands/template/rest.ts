// Plain REST calls for the template commands the SDK has no helper for (list, delete).
import type { Connection } from "../../connection.js";
import { CliError } from "../../cli-error.js";

export async function templateRequest(connection: Connection, method: string, path: string): Promise<unknown> {
  const res = await fetch(new URL(path, connection.apiUrl), { method, headers: { "x-api-key": connection.apiKey } });
  const text = await res.text();
  if (!res.ok) {
    let message = text;
    try {
      message = (JSON.parse(text) as { message?: string }).message ?? text;
    } catch {
      // not JSON: show the raw body
    }
    throw new CliError(`${method} ${path} failed (${res.status}): ${message}`);
  }
  return text === "" ? undefined : (JSON.parse(text) as unknown);
}
