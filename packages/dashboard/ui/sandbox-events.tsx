// The sandbox's events as the bus carries them (`sbx.*.<id>.>`: lifecycle, process, filesystem and code events),
// read live from Burrow's subscribe SSE stream; the newest first, the last MAX_KEPT kept.
import { useEffect, useState } from "preact/hooks";
import { readSse } from "./sse.js";

const MAX_KEPT = 200;

interface EventMessage {
  subject: string;
  data?: string;
}

interface Shown {
  n: number;
  at: string;
  kind: string;
  detail: string;
}

/** A bus subject token: ids of [A-Za-z0-9_-] are themselves (the bus escapes anything else; such ids are not made). */
const token = (id: string) => (/^[A-Za-z0-9_-]+$/.test(id) ? id : "*");

export function SandboxEvents({ id }: { id: string }) {
  const [status, setStatus] = useState("connecting…");
  const [events, setEvents] = useState<Shown[]>([]);
  useEffect(() => {
    const controller = new AbortController();
    let n = 0;
    void (async () => {
      try {
        const stream = readSse(`/burrow/v1/bus/subscribe?subject=${encodeURIComponent(`sbx.*.${token(id)}.>`)}`, controller.signal, () => setStatus("live"));
        for await (const event of stream) {
          if (event.event !== "message") continue;
          const m = JSON.parse(event.data) as EventMessage;
          const kind = m.subject.split(".").slice(3).join(".");
          let detail = "";
          try {
            const body = JSON.parse(m.data ?? "{}") as Record<string, unknown>;
            detail = ["reason", "pid", "cmd", "path", "exitCode", "pauseKind", "checkpointId", "snapshotId"].filter((k) => body[k] !== undefined).map((k) => `${k}=${String(body[k])}`).join(" ");
          } catch {
            detail = m.data ?? "";
          }
          const shown = { n: ++n, at: new Date().toISOString().slice(11, 19), kind, detail };
          setEvents((old) => [shown, ...old].slice(0, MAX_KEPT));
        }
        if (!controller.signal.aborted) setStatus("ended by the server");
      } catch (err) {
        if (!controller.signal.aborted) setStatus(`failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    })();
    return () => controller.abort();
  }, [id]);
  return (
    <div>
      <div class="panel-status" id="events-status">{status}</div>
      <ul class="events" id="sandbox-events">
        {events.map((e) => (
          <li key={e.n} data-kind={e.kind}>
            {e.at} <strong>{e.kind}</strong> {e.detail}
          </li>
        ))}
      </ul>
      {events.length === 0 && <p class="muted">Nothing since this page opened.</p>}
    </div>
  );
}
