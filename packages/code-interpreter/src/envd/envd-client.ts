// The sandbox's envd, asked for its environment variables with the caller's access token. envd answers 401 when
// the sandbox has a token and the request does not carry it, which makes this call the server's token check as
// well: the execution server never holds the token itself, so a token changed by envd's /init (a pooled sandbox
// being claimed) is honoured at once, cache aside.
import { Agent, request } from "node:http";
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
  /** Idle connections go before envd's keep-alive timeout would close them under a request. */
  readonly #agent = new Agent({ keepAlive: true, maxSockets: 8, timeout: 4000 });

  constructor(opts: EnvdClientOptions) {
    this.#opts = { cacheMs: 2000, requestTimeoutMs: 5000, ...opts };
  }

  /**
   * One request whose answer is neither kept nor used: loads the HTTP client's code and opens a kept-alive
   * connection before a client's first run needs them. Not cached, so that an answer from before a pooled sandbox
   * is claimed (no token yet) can never stand in for one after.
   */
  async warmUp(): Promise<void> {
    await this.#fetch(undefined).catch(() => undefined);
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

  /**
   * One GET /envs over node:http with a kept-alive connection. Not the global fetch: loading undici costs the
   * first run of a sandbox tens of milliseconds (hundreds on a busy host), and a sandbox from the warm pool has
   * made no request before its first run.
   */
  #fetch(token: string | undefined, retried = false): Promise<EnvsAnswer> {
    return new Promise<EnvsAnswer>((resolve, reject) => {
      const req = request(
        `${this.#opts.baseUrl}/envs`,
        {
          agent: this.#agent,
          headers: token === undefined ? {} : { "X-Access-Token": token },
          signal: AbortSignal.timeout(this.#opts.requestTimeoutMs),
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("error", (error) => reject(unreachable(error)));
          res.on("end", () => {
            if (res.statusCode === 401) return resolve({ kind: "unauthorized" });
            if (res.statusCode !== 200) {
              return reject(new BurrowError(Code.Unavailable, `envd answered ${res.statusCode} for its environment variables`));
            }
            try {
              resolve({ kind: "ok", envs: stringValues(JSON.parse(Buffer.concat(chunks).toString("utf8"))) });
            } catch (error) {
              reject(new BurrowError(Code.Unavailable, `envd's environment variables are not JSON: ${(error as Error).message}`));
            }
          });
        },
      );
      req.on("error", (error: NodeJS.ErrnoException) => {
        // A kept-alive connection envd closed just as this request went out: once more on a fresh one.
        if (req.reusedSocket && error.code === "ECONNRESET" && !retried) resolve(this.#fetch(token, true));
        else reject(unreachable(error));
      });
      req.end();
    });
  }

  close(): void {
    this.#agent.destroy();
  }
}

function unreachable(error: Error): BurrowError {
  return new BurrowError(Code.Unavailable, `envd is not reachable: ${error.message}`, { cause: error });
}

function stringValues(body: unknown): Record<string, string> {
  const envs: Record<string, string> = {};
  if (typeof body === "object" && body !== null) {
    for (const [k, v] of Object.entries(body)) if (typeof v === "string") envs[k] = v;
  }
  return envs;
}
