import { setTimeout as sleep } from "node:timers/promises";
import { apiRequest } from "../../api.js";
import { defineCommand, usageError } from "../../command.js";
import { clientConnection, type Connection } from "../../connection.js";

interface LogEntry {
  timestamp: string;
  level: string;
  message: string;
  fields: Record<string, string>;
}

/** How often --follow asks for new lines (the server reads sandboxes' logs about once a second). */
const FOLLOW_INTERVAL_MS = 1000;
const LEVELS = ["debug", "info", "warn", "error"];

function format(e: LogEntry, json: boolean): string {
  if (json) return JSON.stringify(e);
  const fields = Object.entries(e.fields).map(([k, v]) => `${k}=${v}`).join(" ");
  return `${e.timestamp} ${e.level.toUpperCase().padEnd(5)} ${e.message}${fields ? `  [${fields}]` : ""}`;
}

async function page(connection: Connection, sandboxId: string, query: URLSearchParams): Promise<LogEntry[] | undefined> {
  const res = await apiRequest(connection, "GET", `/v2/sandboxes/${encodeURIComponent(sandboxId)}/logs`, { query, expect: [404] });
  return res.status === 404 ? undefined : (res.body as { logs: LogEntry[] }).logs;
}

export const sandboxLogs = defineCommand({
  name: "logs",
  summary: "Print a sandbox's logs: its start command's and commands' output and envd's log (-f follows)",
  args: "ID",
  minArgs: 1,
  options: {
    follow: { type: "boolean", short: "f", description: "Keep printing new lines until the sandbox ends (Ctrl-C stops)" },
    level: { type: "string", value: "LEVEL", description: "Minimum level: debug, info, warn or error" },
    search: { type: "string", value: "TEXT", description: "Only lines whose message contains TEXT (case-sensitive)" },
    json: { type: "boolean", description: "One JSON entry per line" },
  },
  notes: "Logs of a killed sandbox stay readable for a while (the server's BURROW_SANDBOX_LOG_RETENTION_MS, 1 h by default).",
  async run({ values, positionals, env }) {
    const sandboxId = positionals[0]!;
    if (values.level !== undefined && !LEVELS.includes(values.level)) throw usageError(`--level must be one of ${LEVELS.join(", ")}`);
    const connection = clientConnection(env);
    const base = new URLSearchParams({ direction: "forward", limit: "1000" });
    if (values.level) base.set("level", values.level);
    if (values.search) base.set("search", values.search);
    const json = values.json === true;

    // Pages go forward from the newest timestamp printed; entries of that same millisecond already printed are
    // skipped by their content.
    let cursor: number | undefined;
    let printedAtCursor = new Set<string>();
    let ended = false;
    for (let first = true; ; first = false) {
      let more = true;
      while (more) {
        const query = new URLSearchParams(base);
        if (cursor !== undefined) query.set("cursor", String(cursor));
        const logs = await page(connection, sandboxId, query);
        if (!logs) {
          if (first) {
            process.stderr.write(`sandbox ${sandboxId} not found (or its logs are no longer kept)\n`);
            process.exitCode = 1;
          }
          return;
        }
        const fresh = logs.filter((e) => !(Date.parse(e.timestamp) === cursor && printedAtCursor.has(JSON.stringify(e))));
        for (const e of fresh) process.stdout.write(`${format(e, json)}\n`);
        if (logs.length > 0) {
          const last = Date.parse(logs[logs.length - 1]!.timestamp);
          if (last !== cursor) printedAtCursor = new Set();
          cursor = last;
          for (const e of logs) if (Date.parse(e.timestamp) === last) printedAtCursor.add(JSON.stringify(e));
        }
        more = logs.length >= 1000 && fresh.length > 0;
        first = false;
      }
      if (!values.follow || ended) return;
      // Once the sandbox is gone, one more round prints what it wrote last (the server keeps an ended sandbox's logs).
      const alive = await apiRequest(connection, "GET", `/sandboxes/${encodeURIComponent(sandboxId)}`, { expect: [404] });
      ended = alive.status === 404;
      if (!ended) await sleep(FOLLOW_INTERVAL_MS);
    }
  },
});
