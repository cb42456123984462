// REST calls and SDK options with a given API key (suites that run several keys or teams on one server).

export interface ApiAnswer {
  status: number;
  /** Answers of many shapes, each checked by its test. */
  json: any;
}

/** A caller of `baseUrl`'s REST API with `key`: JSON in, status and parsed JSON (undefined when empty) out. */
export function keyedApi(baseUrl: string, key: string) {
  return async (method: string, path: string, body?: unknown): Promise<ApiAnswer> => {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { "x-api-key": key, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : undefined };
  };
}

/** The official SDK's connection options for `apiKey` on a server that serves the API and the sandboxes alike. */
export function sdkOptions(apiUrl: string, sandboxUrl: string, apiKey: string) {
  return { apiKey, apiUrl, sandboxUrl, debug: false as const };
}
