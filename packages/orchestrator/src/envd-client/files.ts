// Whole files in and out of a sandbox through envd's /files endpoint.
import { envdBaseUrl, type EnvdTarget } from "./envd-target.js";
import { tokenHeader } from "./transport.js";
import { DEFAULT_USER, BurrowError, Code, codeFromHttpStatus } from "@burrow/protocol";

export interface FileOptions {
  /** Resolves relative paths and owns written files. @default DEFAULT_USER */
  user?: string | undefined;
  signal?: AbortSignal | undefined;
}

function filesUrl(target: EnvdTarget, path: string, user: string | undefined): string {
  return `${envdBaseUrl(target)}/files?${new URLSearchParams({ path, username: user ?? DEFAULT_USER })}`;
}

/**
 * A 4xx or 507 from envd's /files (E2B's statuses) says what was wrong with the call, in the protocol's one
 * status-to-code table; anything else means envd could not be used.
 */
function codeOf(status: number): Code {
  return (status >= 400 && status < 500) || status === 507 ? codeFromHttpStatus(status) : Code.Unavailable;
}

async function failure(res: Response, what: string): Promise<BurrowError> {
  let message = res.statusText;
  try {
    message = ((await res.json()) as { message?: string }).message ?? message;
  } catch {
    // not JSON: the status text says enough
  }
  return new BurrowError(codeOf(res.status), `${what}: ${message}`);
}

async function call(url: string, init: RequestInit, what: string): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (error) {
    const aborted = (init.signal as AbortSignal | undefined)?.aborted === true;
    throw new BurrowError(aborted ? Code.Canceled : Code.Unavailable, `${what}: ${(error as Error).message}`, { cause: error });
  }
}

/** Reads a whole file, refusing one larger than `maxBytes` (sized or not). */
export async function readFile(target: EnvdTarget, path: string, opts: FileOptions & { maxBytes: number }): Promise<Uint8Array> {
  const what = `cannot read ${path}`;
  const res = await call(filesUrl(target, path, opts.user), { headers: tokenHeader(target), signal: opts.signal ?? null }, what);
  if (!res.ok) throw await failure(res, what);
  const tooLarge = () => new BurrowError(Code.ResourceExhausted, `${path} is larger than ${opts.maxBytes} bytes`);
  if (Number(res.headers.get("content-length") ?? "0") > opts.maxBytes) {
    await res.body?.cancel();
    throw tooLarge();
  }
  // Files without a size (FIFOs, /proc) arrive chunked: count as they come.
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body ?? []) {
      size += chunk.length;
      if (size > opts.maxBytes) throw tooLarge();
      chunks.push(chunk);
    }
  } catch (error) {
    await res.body?.cancel().catch(() => undefined);
    if (error instanceof BurrowError) throw error;
    throw new BurrowError(opts.signal?.aborted ? Code.Canceled : Code.Unavailable, `${what}: ${(error as Error).message}`, { cause: error });
  }
  return Buffer.concat(chunks);
}

/** Writes a whole file; envd creates missing parents and makes `user` the owner. */
export async function writeFile(target: EnvdTarget, path: string, data: Uint8Array, opts: FileOptions = {}): Promise<void> {
  const what = `cannot write ${path}`;
  const res = await call(
    filesUrl(target, path, opts.user),
    { method: "POST", headers: { ...tokenHeader(target), "content-type": "application/octet-stream" }, body: data, signal: opts.signal ?? null },
    what,
  );
  if (!res.ok) throw await failure(res, what);
  await res.body?.cancel();
}
