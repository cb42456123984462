// The server's client of a sandbox's code execution server (port 49999 in code-interpreter sandboxes): POST
// /execute, read back as the NDJSON lines E2B's protocol streams. The caller resolves where the server is (the
// gateway's upstream resolver), as it does for envd, and passes the sandbox's access token, which the execution
// server checks with envd.
import { request, type IncomingMessage } from "node:http";
import { BurrowError, Code } from "@burrow/protocol";

export interface ExecutionTarget {
  host: string;
  port: number;
  accessToken?: string | undefined;
}

export interface ExecuteRequest {
  code: string;
  /** Normalised language; runs in its default context unless `contextId` is given. */
  language?: string;
  contextId?: string;
  envVars?: Record<string, string>;
  /** The execution server interrupts the run after this long (0: no limit). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** One line of the stream, as the execution server writes it (`type` plus that type's fields). */
export type ExecutionLine = { type: string } & Record<string, unknown>;

/** Nothing listens on the port: the sandbox is no code-interpreter sandbox. */
function noServer(sandboxId: string): BurrowError {
  return new BurrowError(
    Code.FailedPrecondition,
    `sandbox "${sandboxId}" has no code execution server (nothing listens on port 49999): code runs need a ` +
      "code-interpreter-v1 sandbox or one from a template built on it; use cmd for other sandboxes",
    { reason: "no_execution_server" },
  );
}

function readBody(res: IncomingMessage, limit = 64 * 1024): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    res.setEncoding("utf8");
    res.on("data", (chunk: string) => {
      if (text.length < limit) text += chunk;
    });
    res.on("end", () => resolve(text.slice(0, limit)));
    res.on("error", reject);
  });
}

/** One request to the execution server; its answer, whatever the status. */
function send(sandboxId: string, target: ExecutionTarget, method: string, path: string, body: string | undefined, signal: AbortSignal | undefined): Promise<IncomingMessage> {
  return new Promise<IncomingMessage>((resolve, reject) => {
    const r = request(
      {
        host: target.host,
        port: target.port,
        method,
        path,
        headers: {
          ...(body !== undefined ? { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) } : {}),
          ...(target.accessToken ? { "X-Access-Token": target.accessToken } : {}),
        },
        ...(signal ? { signal } : {}),
      },
      resolve,
    );
    r.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code === "ECONNREFUSED") return reject(noServer(sandboxId));
      if (signal?.aborted) return reject(BurrowError.from(signal.reason, Code.Canceled));
      reject(new BurrowError(Code.Unavailable, `the execution server of sandbox "${sandboxId}" could not be reached: ${error.message}`, { cause: error }));
    });
    r.end(body);
  });
}

/** A non-200 answer as an error: the execution server's refusals of the input are InvalidArgument, with its words. */
async function refusal(sandboxId: string, res: IncomingMessage): Promise<BurrowError> {
  const text = (await readBody(res).catch(() => "")).trim();
  if (res.statusCode === 400 || res.statusCode === 404 || res.statusCode === 422) {
    return new BurrowError(Code.InvalidArgument, `the execution server refused the run: ${text || `HTTP ${res.statusCode}`}`);
  }
  return new BurrowError(Code.Unavailable, `the execution server of sandbox "${sandboxId}" answered ${res.statusCode}${text ? `: ${text}` : ""}`);
}

/** POST /contexts: a new context (its own kernel) in `cwd`; resolves with its id. */
export async function createContext(sandboxId: string, target: ExecutionTarget, opts: { language: string; cwd: string; signal?: AbortSignal | undefined }): Promise<string> {
  const res = await send(sandboxId, target, "POST", "/contexts", JSON.stringify({ language: opts.language, cwd: opts.cwd }), opts.signal);
  if (res.statusCode !== 200) throw await refusal(sandboxId, res);
  const id = (JSON.parse(await readBody(res)) as { id?: unknown }).id;
  if (typeof id !== "string") throw new BurrowError(Code.Unavailable, `the execution server of sandbox "${sandboxId}" answered a context without an id`);
  return id;
}

/** DELETE /contexts/{id}. */
export async function removeContext(sandboxId: string, target: ExecutionTarget, contextId: string): Promise<void> {
  const res = await send(sandboxId, target, "DELETE", `/contexts/${encodeURIComponent(contextId)}`, undefined, AbortSignal.timeout(30_000));
  if (res.statusCode !== 200 && res.statusCode !== 204) throw await refusal(sandboxId, res);
  res.resume();
}

/** GET /health: resolves when an execution server answers (ready or still starting its kernels). */
export async function probe(sandboxId: string, target: ExecutionTarget, signal?: AbortSignal): Promise<void> {
  const res = await send(sandboxId, target, "GET", "/health", undefined, signal ?? AbortSignal.timeout(10_000));
  res.resume();
}

/** POST /execute and the parsed lines of its answer, ending with `end_of_execution` when the server finished. */
export async function* execute(sandboxId: string, target: ExecutionTarget, req: ExecuteRequest): AsyncIterable<ExecutionLine> {
  const body = JSON.stringify({
    code: req.code,
    ...(req.contextId !== undefined ? { context_id: req.contextId } : { language: req.language }),
    ...(req.envVars && Object.keys(req.envVars).length > 0 ? { env_vars: req.envVars } : {}),
    ...(req.timeoutMs ? { timeout_ms: req.timeoutMs } : {}),
  });
  const res = await send(sandboxId, target, "POST", "/execute", body, req.signal);
  if (res.statusCode !== 200) throw await refusal(sandboxId, res);
  res.setEncoding("utf8");
  let pending = "";
  try {
    for await (const chunk of res as AsyncIterable<string>) {
      pending += chunk;
      let newline: number;
      while ((newline = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, newline).trim();
        pending = pending.slice(newline + 1);
        if (line === "") continue;
        const parsed = JSON.parse(line) as unknown;
        if (typeof parsed === "object" && parsed !== null && typeof (parsed as { type?: unknown }).type === "string") yield parsed as ExecutionLine;
      }
    }
  } catch (error) {
    if (req.signal?.aborted) throw BurrowError.from(req.signal.reason, Code.Canceled);
    throw new BurrowError(Code.Unavailable, `the execution stream of sandbox "${sandboxId}" broke off: ${(error as Error).message}`, { cause: error });
  } finally {
    res.destroy();
  }
}

/** Languages code runs accept, by the names clients may use (as the execution server normalises them, plus a few). */
const LANGUAGES: Record<string, string> = {
  python: "python",
  python3: "python",
  py: "python",
  javascript: "javascript",
  js: "javascript",
  node: "javascript",
  typescript: "typescript",
  ts: "typescript",
  bash: "bash",
  sh: "bash",
  r: "r",
};

export const CODE_LANGUAGES = ["python", "javascript", "typescript", "bash", "r"] as const;

/** The execution server's name for a language, or undefined for one code runs do not know. */
export function normalizeCodeLanguage(language: string): string | undefined {
  return Object.hasOwn(LANGUAGES, language.trim().toLowerCase()) ? LANGUAGES[language.trim().toLowerCase()] : undefined;
}
