import { BurrowError, codeFromHttpStatus } from "@burrow/protocol";

/**
 * An error answer of the Burrow API: `status` is its HTTP status, `code` the Connect code that status stands for
 * (E2B's body `{"code": <status>, "message"}` carries no other), `message` the server's.
 */
export class BurrowApiError extends BurrowError {
  override name = "BurrowApiError";
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(codeFromHttpStatus(status), message);
  }
}

export interface BusClientOptions {
  /** Server origin, e.g. "http://127.0.0.1:3000". */
  baseUrl: string;
  /** Sent as X-API-Key. @default process.env.BURROW_API_KEY */
  apiKey?: string;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
  /** @default 30000 */
  requestTimeoutMs?: number;
}

export interface CallOptions {
  signal?: AbortSignal;
}

export class Http {
  private readonly fetchFn: typeof fetch;
  constructor(readonly opts: BusClientOptions) {
    this.fetchFn = opts.fetch ?? globalThis.fetch;
  }

  headers(extra: Record<string, string> = {}): Record<string, string> {
    const key = this.opts.apiKey ?? process.env["BURROW_API_KEY"];
    return { ...(key ? { "x-api-key": key } : {}), ...extra };
  }

  url(path: string): string {
    return new URL(`/burrow/v1${path}`, this.opts.baseUrl).toString();
  }

  async fetch(path: string, init: RequestInit & { signal?: AbortSignal; noTimeout?: boolean }): Promise<Response> {
    const signals: AbortSignal[] = [];
    if (init.signal) signals.push(init.signal);
    if (!init.noTimeout) signals.push(AbortSignal.timeout(this.opts.requestTimeoutMs ?? 30_000));
    const res = await this.fetchFn(this.url(path), { ...init, signal: signals.length ? AbortSignal.any(signals) : null });
    if (res.status >= 400) {
      let message = res.statusText;
      try {
        const b = (await res.json()) as { message?: string };
        message = b.message ?? message;
      } catch {
        // not JSON: keep the status line
      }
      throw new BurrowApiError(res.status, message);
    }
    return res;
  }

  async json<T>(path: string, method: string, body: unknown, opts: CallOptions & { timeoutMs?: number } = {}): Promise<{ status: number; body: T | undefined }> {
    const res = await this.fetch(path, {
      method,
      headers: this.headers(body === undefined ? {} : { "content-type": "application/json" }),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    if (res.status === 204 || res.status === 202) {
      await res.body?.cancel();
      return { status: res.status, body: undefined };
    }
    return { status: res.status, body: (await res.json()) as T };
  }
}

export type Payload = string | Uint8Array;

export function toBody(p: Payload): { data: string } | { dataBase64: string } {
  return typeof p === "string" ? { data: p } : { dataBase64: Buffer.from(p).toString("base64") };
}

export function fromBody(b: { dataBase64: string }): Uint8Array {
  return new Uint8Array(Buffer.from(b.dataBase64, "base64"));
}
