// The sandbox's log (envd's log and its processes' output): the newest 200 lines, oldest first, polled every 2 s.
import { api, sandboxPath, type LogEntry } from "./api.js";
import { usePoll } from "./use-poll.js";

export function Logs({ id }: { id: string }) {
  const { data, error } = usePoll(
    (signal) => api<{ logs: LogEntry[] }>("GET", `/v2${sandboxPath(id)}/logs?limit=200&direction=backward`, undefined, signal).then((r) => r.logs.slice().sort((a, b) => a.timestamp.localeCompare(b.timestamp))),
    2_000,
    [id],
  );
  return (
    <div class="logs-panel">
      {error && <p class="error" role="alert">{error}</p>}
      <pre id="sandbox-logs">
        {data?.map((l) => `${l.timestamp.slice(11, 23)} ${l.level.padEnd(5)} ${l.message}\n`).join("") ?? "loading…"}
      </pre>
    </div>
  );
}
