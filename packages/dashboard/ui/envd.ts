// envd's Connect-RPC services and /files, reached through the server's gateway on this origin: the gateway routes
// by the E2b-Sandbox-Id header (as the official SDK does) and envd checks the sandbox's access token.
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { Filesystem, Process } from "@burrow/protocol";

export const SANDBOX_USER = "user";

export interface EnvdTarget {
  sandboxId: string;
  accessToken: string;
}

export function envdHeaders(target: EnvdTarget): Record<string, string> {
  return {
    "e2b-sandbox-id": target.sandboxId,
    "e2b-sandbox-port": "49983",
    "x-access-token": target.accessToken,
    authorization: `Basic ${btoa(`${SANDBOX_USER}:`)}`,
  };
}

export interface EnvdClients {
  process: Client<typeof Process>;
  filesystem: Client<typeof Filesystem>;
}

export function envdClients(target: EnvdTarget): EnvdClients {
  const withHeaders: Interceptor = (next) => (req) => {
    for (const [name, value] of Object.entries(envdHeaders(target))) req.header.set(name, value);
    return next(req);
  };
  const transport = createConnectTransport({ baseUrl: location.origin, useBinaryFormat: false, interceptors: [withHeaders] });
  return { process: createClient(Process, transport), filesystem: createClient(Filesystem, transport) };
}

function filesUrl(path: string): string {
  return `/files?${new URLSearchParams({ path, username: SANDBOX_USER })}`;
}

export async function readFile(target: EnvdTarget, path: string, signal?: AbortSignal): Promise<Blob> {
  const res = await fetch(filesUrl(path), { headers: envdHeaders(target), signal: signal ?? null });
  if (!res.ok) throw new Error(`reading ${path}: ${res.status} ${await res.text()}`);
  return res.blob();
}

export async function uploadFile(target: EnvdTarget, path: string, file: Blob, signal?: AbortSignal): Promise<void> {
  const form = new FormData();
  form.append("file", file, path);
  const res = await fetch(filesUrl(path), { method: "POST", headers: envdHeaders(target), body: form, signal: signal ?? null });
  if (!res.ok) throw new Error(`uploading ${path}: ${res.status} ${await res.text()}`);
}
