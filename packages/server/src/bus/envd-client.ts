// The server's own Connect client for envd: processes (with pid, pty and output as they come) and WatchDir streams,
// plus the /files HTTP endpoints for copying files between sandboxes. The server reaches envd at the sandbox's
// address with its X-Access-Token, like the SDK does through the gateway.
import { ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { DEFAULT_USER, ENVD_PORT, Filesystem, Process, filesystemPb, processPb } from "@burrow/protocol";
import { Code, ServerError } from "../errors.js";

/** Where envd is and how to authenticate to it. */
export interface EnvdTarget {
  address: string;
  accessToken: string;
}

function transport(t: EnvdTarget) {
  // Connect+JSON over HTTP/1.1, as the SDK speaks it.
  return createConnectTransport({ baseUrl: `http://${t.address}:${ENVD_PORT}`, httpVersion: "1.1", useBinaryFormat: false });
}

function headersFor(t: EnvdTarget, user: string): Record<string, string> {
  return {
    authorization: `Basic ${Buffer.from(`${user}:`).toString("base64")}`,
    // envd sends keepalives at this interval (seconds) so quiet streams stay open through idle timeouts.
    "keepalive-ping-interval": "30",
    "x-access-token": t.accessToken,
  };
}

/** An envd failure as a ServerError with the same Connect code (NotFound, InvalidArgument, …). */
export function envdError(err: unknown, what: string): ServerError {
  if (ServerError.is(err)) return err;
  const c = ConnectError.from(err);
  return new ServerError(c.code, `${what}: ${c.rawMessage}`, { cause: err });
}

export interface ProcessSpec {
  /** Run with `/bin/bash -l -c`, as the E2B SDK runs commands. */
  cmd: string;
  user?: string | undefined;
  cwd?: string | undefined;
  envs?: Record<string, string> | undefined;
  pty?: { cols: number; rows: number } | undefined;
  /** Process lifetime: envd kills it when this elapses (Connect-Timeout-Ms), and the call fails DeadlineExceeded. */
  timeoutMs?: number | undefined;
  signal?: AbortSignal | undefined;
}

export type ProcessStreamEvent =
  | { kind: "start"; pid: number }
  | { kind: "data"; stream: "stdout" | "stderr" | "pty"; data: Uint8Array }
  | { kind: "end"; exitCode: number; status: string; error?: string };

/** Starts a process and yields its start, output and end. Aborting the signal stops following (and envd's stream). */
export async function* streamProcess(t: EnvdTarget, spec: ProcessSpec): AsyncIterable<ProcessStreamEvent> {
  const client: Client<typeof Process> = createClient(Process, transport(t));
  const stream = client.start(
    {
      process: { cmd: "/bin/bash", args: ["-l", "-c", spec.cmd], envs: spec.envs ?? {}, ...(spec.cwd ? { cwd: spec.cwd } : {}) },
      ...(spec.pty ? { pty: { size: { cols: spec.pty.cols, rows: spec.pty.rows } } } : {}),
      stdin: false,
    },
    { headers: headersFor(t, spec.user ?? DEFAULT_USER), ...(spec.signal ? { signal: spec.signal } : {}), ...(spec.timeoutMs ? { timeoutMs: spec.timeoutMs } : {}) },
  );
  for await (const r of stream) {
    const e = r.event?.event;
    if (!e) continue;
    if (e.case === "start") yield { kind: "start", pid: e.value.pid };
    else if (e.case === "data") {
      const o = e.value.output;
      if ((o.case === "stdout" || o.case === "stderr" || o.case === "pty") && o.value.length > 0) yield { kind: "data", stream: o.case, data: o.value };
    } else if (e.case === "end") {
      yield { kind: "end", exitCode: e.value.exitCode, status: e.value.status, ...(e.value.error ? { error: e.value.error } : {}) };
      return;
    }
  }
}

/** Best effort SIGKILL of a process (used when its caller gives up on it). */
export async function killProcess(t: EnvdTarget, pid: number, user?: string): Promise<void> {
  const client: Client<typeof Process> = createClient(Process, transport(t));
  await client.sendSignal(
    { process: { selector: { case: "pid", value: pid } }, signal: processPb.Signal.SIGKILL },
    { headers: headersFor(t, user ?? DEFAULT_USER), timeoutMs: 5000 },
  );
}

export interface DirEvent {
  /** Relative to the watched directory. */
  name: string;
  type: filesystemPb.EventType;
}

/**
 * Opens a WatchDir stream and resolves once envd watches (its start event), so that changes made after this
 * resolves are reported. Iterate `events` until the signal aborts or the stream breaks (the iterator throws).
 */
export async function openDirWatch(t: EnvdTarget, o: { path: string; recursive: boolean; user?: string | undefined; signal: AbortSignal }): Promise<AsyncIterator<DirEvent>> {
  const client: Client<typeof Filesystem> = createClient(Filesystem, transport(t));
  const stream = client.watchDir({ path: o.path, recursive: o.recursive }, { headers: headersFor(t, o.user ?? DEFAULT_USER), signal: o.signal });
  const it = stream[Symbol.asyncIterator]();
  try {
    for (;;) {
      const first = await it.next();
      if (first.done) throw new ServerError(Code.Unavailable, "envd closed the watch before it started");
      if (first.value.event.case === "start") break;
    }
  } catch (err) {
    throw envdError(err, `cannot watch ${o.path}`);
  }
  return {
    async next(): Promise<IteratorResult<DirEvent>> {
      for (;;) {
        const r = await it.next();
        if (r.done) return { done: true, value: undefined };
        if (r.value.event.case === "filesystem") return { done: false, value: { name: r.value.event.value.name, type: r.value.event.value.type } };
      }
    },
  };
}

export const FS_EVENT_TYPES: Partial<Record<filesystemPb.EventType, "create" | "write" | "remove" | "rename" | "chmod">> = {
  [filesystemPb.EventType.CREATE]: "create",
  [filesystemPb.EventType.WRITE]: "write",
  [filesystemPb.EventType.REMOVE]: "remove",
  [filesystemPb.EventType.RENAME]: "rename",
  [filesystemPb.EventType.CHMOD]: "chmod",
};

function filesUrl(t: EnvdTarget, path: string, user: string): string {
  return `http://${t.address}:${ENVD_PORT}/files?${new URLSearchParams({ path, username: user })}`;
}

async function filesFailure(res: Response, what: string): Promise<ServerError> {
  let message = res.statusText;
  try {
    message = ((await res.json()) as { message?: string }).message ?? message;
  } catch {
    // not JSON
  }
  const code = res.status === 404 ? Code.NotFound : res.status === 400 ? Code.InvalidArgument : res.status === 403 ? Code.PermissionDenied : Code.Unavailable;
  return new ServerError(code, `${what}: ${message}`);
}

/** Reads a whole file from a sandbox (bounded by `maxBytes`). */
export async function readSandboxFile(t: EnvdTarget, path: string, o: { user?: string | undefined; maxBytes: number; signal?: AbortSignal | undefined }): Promise<Uint8Array> {
  const res = await fetch(filesUrl(t, path, o.user ?? DEFAULT_USER), { headers: { "x-access-token": t.accessToken }, ...(o.signal ? { signal: o.signal } : {}) });
  if (!res.ok) throw await filesFailure(res, `cannot read ${path}`);
  const len = Number(res.headers.get("content-length") ?? "0");
  if (len > o.maxBytes) {
    await res.body?.cancel();
    throw new ServerError(Code.ResourceExhausted, `${path} is larger than ${o.maxBytes} bytes`);
  }
  return new Uint8Array(await res.arrayBuffer());
}

/** Writes a whole file into a sandbox (parents are created, the file is owned by `user`). */
export async function writeSandboxFile(t: EnvdTarget, path: string, data: Uint8Array, o: { user?: string | undefined; signal?: AbortSignal | undefined } = {}): Promise<void> {
  const res = await fetch(filesUrl(t, path, o.user ?? DEFAULT_USER), {
    method: "POST",
    headers: { "x-access-token": t.accessToken, "content-type": "application/octet-stream" },
    body: data,
    ...(o.signal ? { signal: o.signal } : {}),
  });
  if (!res.ok) throw await filesFailure(res, `cannot write ${path}`);
  await res.body?.cancel();
}
