// Everything the gateway takes from a sandbox's answer is checked here, in one place, before any of it is written
// to a client. A sandbox is untrusted: its root can answer on any port (envd's included) with whatever bytes it
// likes. Node's client parser (llhttp) already rejects malformed framing, header names and header values (those
// arrive as 'error' events, see isParseError), but it hands over any three-digit status and a reason phrase with
// control characters, which node:http's server would refuse to write by throwing.
import { STATUS_CODES, validateHeaderName, validateHeaderValue, type IncomingMessage } from "node:http";

/** A response head that is safe to write to a client. */
export interface CheckedHead {
  ok: true;
  statusCode: number;
  statusMessage: string;
  /** Name/value pairs as received (names keep their case), every one valid. */
  rawHeaders: string[];
}

export interface RefusedHead {
  ok: false;
  /** Why the answer is unusable, for the log. */
  cause: string;
}

/** Which statuses a head may carry: a final answer, or the 101 that completes an upgrade. */
export type HeadKind = "final" | "switching";

/** HTAB, SP, VCHAR and obs-text (RFC 9112 §4): no C0 control characters and no DEL. */
const REASON_PHRASE = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * Check a response head from a sandbox. Final answers must be 200–599: 1xx interim answers never get here (Node
 * reports them as 'information' and goes on to the final one), and a 101 outside an upgrade would leave the client
 * expecting another protocol. Upgrades must be exactly 101.
 */
export function checkUpstreamHead(res: IncomingMessage, kind: HeadKind): CheckedHead | RefusedHead {
  const statusCode = res.statusCode;
  const valid =
    typeof statusCode === "number" &&
    Number.isInteger(statusCode) &&
    (kind === "switching" ? statusCode === 101 : statusCode >= 200 && statusCode <= 599);
  if (!valid) return { ok: false, cause: `status ${String(statusCode)} is not a valid ${kind === "switching" ? "upgrade" : "final"} status` };
  const headerProblem = checkRawHeaders(res.rawHeaders);
  if (headerProblem) return { ok: false, cause: headerProblem };
  return { ok: true, statusCode, statusMessage: reasonPhrase(statusCode, res.statusMessage), rawHeaders: res.rawHeaders };
}

/** The sandbox's reason phrase when it is printable, else the standard one: clients ignore it anyway (RFC 9110 §15). */
export function reasonPhrase(statusCode: number, given: string | undefined): string {
  if (given !== undefined && REASON_PHRASE.test(given)) return given;
  return STATUS_CODES[statusCode] ?? "";
}

/** The first invalid header, described, or undefined when all are valid. Uses node:http's own checks. */
export function checkRawHeaders(rawHeaders: readonly string[]): string | undefined {
  if (rawHeaders.length % 2 !== 0) return "header list is not name/value pairs";
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    try {
      validateHeaderName(name);
    } catch {
      return `invalid header name ${JSON.stringify(name)}`;
    }
    try {
      validateHeaderValue(name, rawHeaders[i + 1]!);
    } catch {
      return `invalid value for header ${JSON.stringify(name)}`;
    }
  }
  return undefined;
}

/**
 * Errors from Node's HTTP client parser (`HPE_*`: bad status line, header token or value, framing, oversized
 * head): the sandbox answered, but not with HTTP.
 */
export function isParseError(err: unknown): err is Error & { code: string } {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" && code.startsWith("HPE_");
}
