// Messages on a subject pattern as they arrive: the bus's SSE stream (GET /burrow/v1/bus/subscribe), newest first,
// the last MAX_KEPT kept, and per subject how many arrived and when the last did.
import { useEffect, useState } from "preact/hooks";
import { readSse } from "./sse.js";

const MAX_KEPT = 500;

interface BusMessage {
  subject: string;
  headers: Record<string, string>;
  data?: string;
  dataBase64: string;
}

interface Arrived extends BusMessage {
  n: number;
  at: string;
}

interface SubjectCount {
  count: number;
  lastAt: string;
}

export function BusMessages({ pattern }: { pattern: string }) {
  const [messages, setMessages] = useState<Arrived[]>([]);
  const [subjects, setSubjects] = useState<Map<string, SubjectCount>>(new Map());
  const [status, setStatus] = useState("connecting…");
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setMessages([]);
    setSubjects(new Map());
    setError(null);
    const controller = new AbortController();
    let n = 0;
    void (async () => {
      try {
        setStatus("connecting…");
        const stream = readSse(`/burrow/v1/bus/subscribe?subject=${encodeURIComponent(pattern)}`, controller.signal, () => setStatus("subscribed"));
        for await (const event of stream) {
          if (event.event !== "message") continue;
          const m = JSON.parse(event.data) as BusMessage;
          const at = new Date().toISOString();
          const arrived = { ...m, n: ++n, at };
          setMessages((old) => [arrived, ...old].slice(0, MAX_KEPT));
          setSubjects((old) => new Map(old).set(m.subject, { count: (old.get(m.subject)?.count ?? 0) + 1, lastAt: at }));
        }
        if (!controller.signal.aborted) setStatus("ended by the server");
      } catch (err) {
        if (controller.signal.aborted) return;
        setStatus("failed");
        setError(err instanceof Error ? err.message : String(err));
      }
    })();
    return () => controller.abort();
  }, [pattern]);
  const bySubject = [...subjects].sort(([a], [b]) => a.localeCompare(b));
  return (
    <div class="bus-messages">
      <div class="panel-status">
        <code>{pattern}</code>: <span id="bus-status">{status}</span> · {messages.length} message{messages.length === 1 ? "" : "s"}
      </div>
      {error && <p class="error" role="alert">{error}</p>}
      {bySubject.length > 0 && (
        <div class="table-wrap">
          <table id="bus-subjects">
            <thead>
              <tr>
                <th>Subject</th>
                <th>Messages</th>
                <th>Last</th>
              </tr>
            </thead>
            <tbody>
              {bySubject.map(([subject, s]) => (
                <tr key={subject} data-subject={subject}>
                  <td><code>{subject}</code></td>
                  <td>{s.count}</td>
                  <td>{s.lastAt.slice(11, 19)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <ul class="entries messages" id="bus-messages">
        {messages.map((m) => (
          <li key={m.n} data-subject={m.subject}>
            <span class="muted">{m.at.slice(11, 23)}</span> <code>{m.subject}</code>{" "}
            <span class="data">{m.data ?? `(${Math.floor((m.dataBase64.length * 3) / 4)} bytes, binary)`}</span>
            {Object.keys(m.headers).length > 0 && <span class="muted"> · {Object.entries(m.headers).map(([k, v]) => `${k}=${v}`).join(", ")}</span>}
          </li>
        ))}
      </ul>
    </div>
  );
}
