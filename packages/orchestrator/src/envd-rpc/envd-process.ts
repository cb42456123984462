// A small Connect client for envd's Process service: the builder and the start command run commands in a
// sandbox through the same protocol the SDK uses, so they get envd's user switching, env and cwd handling.
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ENVD_PORT, Process } from "@burrow/protocol";

/** Where envd is and how to authenticate to it. */
export interface EnvdTarget {
  /** The sandbox's address (its veth IP). */
  address: string;
  /** X-Access-Token envd was /init-ed with; omit when it has none. */
  accessToken?: string | undefined;
}

export interface EnvdCommand {
  /** Shell command line, run with `/bin/sh -c`. */
  command: string;
  /** User to run as (must exist in the sandbox's /etc/passwd). */
  user: string;
  cwd?: string | undefined;
  envs?: Record<string, string> | undefined;
  /** Process lifetime bound enforced by envd; 0 or undefined: none. */
  timeoutMs?: number | undefined;
  signal?: AbortSignal | undefined;
}

export type OutputStream = "stdout" | "stderr";

export interface CommandResult {
  exitCode: number;
  /** envd's status text, e.g. "exit status 1" or "signal: killed". */
  status: string;
  error?: string | undefined;
}

/** A command that failed to run (not one that ran and exited non-zero). */
export class EnvdCommandError extends Error {
  override readonly name = "EnvdCommandError";
  constructor(
    readonly code: Code,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

type ProcessClient = Client<typeof Process>;

function processClient(target: EnvdTarget): ProcessClient {
  const transport = createConnectTransport({
    baseUrl: `http://${target.address}:${ENVD_PORT}`,
    httpVersion: "1.1",
    // The SDK speaks Connect+JSON; envd must accept it, and so it does for us too.
    useBinaryFormat: false,
  });
  return createClient(Process, transport);
}

function headersFor(target: EnvdTarget, user: string): Record<string, string> {
  const headers: Record<string, string> = {
    authorization: `Basic ${Buffer.from(`${user}:`).toString("base64")}`,
    // envd sends keepalives at this interval (seconds) so idle long steps (apt downloads) keep the socket alive.
    "keepalive-ping-interval": "30",
  };
  if (target.accessToken) headers["x-access-token"] = target.accessToken;
  return headers;
}

/**
 * Run a command to completion, handing every output chunk to `onOutput` as it arrives.
 * Resolves with the exit status (non-zero exits are results, not errors).
 */
export async function runEnvdCommand(
  target: EnvdTarget,
  cmd: EnvdCommand,
  onOutput?: (stream: OutputStream, chunk: Uint8Array) => void,
): Promise<CommandResult> {
  const client = processClient(target);
  try {
    const events = client.start(
      {
        process: { cmd: "/bin/sh", args: ["-c", cmd.command], envs: cmd.envs ?? {}, cwd: cmd.cwd },
        stdin: false,
      },
      { headers: headersFor(target, cmd.user), signal: cmd.signal, timeoutMs: cmd.timeoutMs || undefined },
    );
    for await (const response of events) {
      const event = response.event?.event;
      if (!event) continue;
      if (event.case === "data") {
        const output = event.value.output;
        if ((output.case === "stdout" || output.case === "stderr") && output.value.length > 0) {
          onOutput?.(output.case, output.value);
        }
      } else if (event.case === "end") {
        return { exitCode: event.value.exitCode, status: event.value.status, error: event.value.error };
      }
    }
  } catch (error) {
    const connectError = ConnectError.from(error);
    throw new EnvdCommandError(connectError.code, `envd could not run the command: ${connectError.rawMessage}`, {
      cause: error,
    });
  }
  throw new EnvdCommandError(Code.Unavailable, "envd closed the process stream without an end event");
}

/** A command started in the background; its output is kept (bounded) for error messages. */
export interface BackgroundCommand {
  pid: number;
  /** Resolves when the process ends or the stream breaks; never rejects. */
  readonly ended: Promise<CommandResult | Error>;
  /** The last output (stdout and stderr interleaved), at most `outputLimitBytes`. */
  output(): string;
  /** Stop following the output stream (the process keeps running in the sandbox). */
  detach(): void;
}

/**
 * Start a long-running command and return once envd reports its pid. The stream is followed in the
 * background; detaching does not kill the process (envd keeps processes whose client went away).
 */
export async function startEnvdCommand(
  target: EnvdTarget,
  cmd: EnvdCommand & { tag?: string; outputLimitBytes?: number },
): Promise<BackgroundCommand> {
  const client = processClient(target);
  const follow = new AbortController();
  const signal = cmd.signal ? AbortSignal.any([cmd.signal, follow.signal]) : follow.signal;
  const limit = cmd.outputLimitBytes ?? 16_384;
  let output = "";
  const decoder = new TextDecoder();
  const events = client.start(
    {
      process: { cmd: "/bin/sh", args: ["-c", cmd.command], envs: cmd.envs ?? {}, cwd: cmd.cwd },
      tag: cmd.tag,
      stdin: false,
    },
    { headers: headersFor(target, cmd.user), signal, timeoutMs: cmd.timeoutMs || undefined },
  );
  const iterator = events[Symbol.asyncIterator]();
  let pid: number;
  try {
    const first = await iterator.next();
    const event = first.done ? undefined : first.value.event?.event;
    if (event?.case !== "start") throw new EnvdCommandError(Code.Internal, "envd did not send a start event");
    pid = event.value.pid;
  } catch (error) {
    follow.abort();
    if (error instanceof EnvdCommandError) throw error;
    const connectError = ConnectError.from(error);
    throw new EnvdCommandError(connectError.code, `envd could not start the command: ${connectError.rawMessage}`, {
      cause: error,
    });
  }
  const ended = (async (): Promise<CommandResult | Error> => {
    try {
      for (;;) {
        const next = await iterator.next();
        if (next.done) return new Error("process stream ended without an end event");
        const event = next.value.event?.event;
        if (event?.case === "data" && (event.value.output.case === "stdout" || event.value.output.case === "stderr")) {
          output = (output + decoder.decode(event.value.output.value, { stream: true })).slice(-limit);
        } else if (event?.case === "end") {
          return { exitCode: event.value.exitCode, status: event.value.status, error: event.value.error };
        }
      }
    } catch (error) {
      return error instanceof Error ? error : new Error(String(error));
    }
  })();
  return { pid, ended, output: () => output, detach: () => follow.abort() };
}
