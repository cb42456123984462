// The REST API as the dashboard calls it: same origin, the signed-in key in X-API-Key, failures as ApiError with
// the server's E2B-shaped message.
const KEY_ITEM = "burrow.apiKey";

export class ApiError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

export function storedKey(): string | null {
  return sessionStorage.getItem(KEY_ITEM);
}

export function storeKey(key: string | null): void {
  if (key === null) sessionStorage.removeItem(KEY_ITEM);
  else sessionStorage.setItem(KEY_ITEM, key);
}

/** The key of this tab's session; a 401 anywhere signs out. */
export function apiKey(): string {
  const key = storedKey();
  if (!key) throw new ApiError(401, "not signed in");
  return key;
}

export async function api<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  return (await apiWithHeaders<T>(method, path, body, signal)).data;
}

export async function apiWithHeaders<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<{ data: T; headers: Headers }> {
  const headers: Record<string, string> = { "x-api-key": apiKey() };
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? null : JSON.stringify(body), signal: signal ?? null });
  const text = await res.text();
  if (!res.ok) {
    let message = text || res.statusText;
    try {
      message = (JSON.parse(text) as { message?: string }).message ?? message;
    } catch {
      // not JSON: the raw text says enough
    }
    if (res.status === 401) window.dispatchEvent(new CustomEvent("burrow:signed-out"));
    throw new ApiError(res.status, message);
  }
  return { data: (text ? JSON.parse(text) : undefined) as T, headers: res.headers };
}

export interface ListedSandbox {
  sandboxID: string;
  templateID: string;
  alias?: string;
  cpuCount: number;
  memoryMB: number;
  startedAt: string;
  endAt: string;
  state: "running" | "paused";
  metadata: Record<string, string>;
}

export interface SandboxDetail extends ListedSandbox {
  envdAccessToken: string;
  envdVersion: string;
  diskSizeMB?: number;
  allowInternetAccess?: boolean;
  lifecycle?: Record<string, unknown>;
  network?: Record<string, unknown>;
  volumeMounts?: { name?: string; volumeID?: string; path?: string }[];
}

export interface MetricSample {
  timestamp: string;
  cpuUsedPct: number;
  memUsed: number;
  memTotal: number;
}

export interface LogEntry {
  timestamp: string;
  level: string;
  message: string;
}

export const sandboxPath = (id: string) => `/sandboxes/${encodeURIComponent(id)}`;
