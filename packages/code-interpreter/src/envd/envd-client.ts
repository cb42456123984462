// The sandbox's envd, asked for its environment variables with the caller's access token. envd answers 401 when
// the sandbox has a token and the request does not carry it, which makes this call the server's token check as
// well: the execution server never holds the token itself, so a token changed by envd's /init (a pooled sandbox
// being claimed) is honoured at once, cache aside.
import { BurrowError, Code } from "@burrow/protocol/errors";

export type EnvsAnswer = { kind: "ok"; envs: Record<string, string> } | { kind: "unauthorized" };

const CACHE_ENTRIES = 16;

export interface EnvdClientOptions {
  /** e.g. http://127.0.0.1:49983 */
  baseUrl: string;
  /** How long an answer is reused. @default 2000 */
  cacheMs?: number;
  /** @default 5000 */
  requestTimeoutMs?: number;
}

export class EnvdClient {
  readonly #opts: Required<EnvdClientOptions>;
  readonly #cache = new Map<string, { at: number; answer: EnvsAnswer }>();

  constructor(opts: EnvdClientOptions) {
    this.#opts = { cacheMs: 2000, requestTimeoutMs: 5000, ...opts };
  }

  async envs(token: string | undefined): Promise<EnvsAnswer> {
    const key = token === undefined ? "" : `t:${token}`;
    const cached = this.#cache.get(key);
    if (cached && Date.now() - cached.at < this.#opts.cacheMs) return cached.answer;
    const answer = await this.#fetch(token);
    if (this.#cache.size >= CACHE_ENTRIES) this.#cache.delete(this.#cache.keys().next().value as string);
    this.#cache.set(key, { at: Date.now(), answer });
    return answer;
  }

  async #fetch(token: string | undefined): Promise<EnvsAnswer> {
    let res: Response;
    try {
      res = await fetch(`${this.#opts.baseUrl}/envs`, {
        headers: token === undefined ? {} : { "X-Access-Token": token },
        signal: AbortSignal.timeout(this.#opts.requestTimeoutMs),
      });
    } catch (error) {
      throw new BurrowError(Code.Unavailable, `envd is not reachable: ${(error as Error).message}`, { cause: error });
    }
    if (res.status === 401) {
      await res.body?.cancel();
      return { kind: "unauthorized" };
    }
    if (!res.ok) {
      await res.body?.cancel();
      throw new BurrowError(Code.Unavailable, `envd answered ${res.status} for its environment variables`);
    }
    const body = (await res.json()) as unknown;
    const envs: Record<string, string> = {};
    if (typeof body === "object" && body !== null) {
      for (const [k, v] of Object.entries(body)) if (typeof v === "string") envs[k] = v;
    }
    return { kind: "ok", envs };
  }
}
