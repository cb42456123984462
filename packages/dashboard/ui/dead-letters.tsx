// Dead letters as the bus moves them: both backends publish each one on `dlq.<stream>.<durable>` with headers that
// say why (max_deliver, terminated), from where (stream, durable, original subject and sequence) and after how many
// deliveries. Read live from the same SSE stream as the messages; requeue and drop are in the queues panel
// (queues-panel.tsx). A queue's stream is QUEUE_<name>, shown as the queue's name.
import { useEffect, useState } from "preact/hooks";
import { readSse } from "./sse.js";

const MAX_KEPT = 200;
const SUBJECT = "dlq.>";

interface DeadLetter {
  n: number;
  at: string;
  source: string;
  reason: string;
  subject: string;
  seq: string;
  deliveries: string;
  data: string;
}

export function DeadLetters() {
  const [letters, setLetters] = useState<DeadLetter[]>([]);
  const [status, setStatus] = useState("connecting…");
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const controller = new AbortController();
    let n = 0;
    void (async () => {
      try {
        for await (const event of readSse(`/burrow/v1/bus/subscribe?subject=${encodeURIComponent(SUBJECT)}`, controller.signal, () => setStatus("watching"))) {
          if (event.event !== "message") continue;
          const m = JSON.parse(event.data) as { subject: string; headers: Record<string, string>; data?: string; dataBase64: string };
          const h = m.headers;
          const stream = h["burrow-dlq-stream"] ?? "?";
          const letter: DeadLetter = {
            n: ++n,
            at: new Date().toISOString(),
            source: stream.startsWith("QUEUE_") ? `queue ${stream.slice("QUEUE_".length)}` : `${stream} / ${h["burrow-dlq-durable"] ?? "?"}`,
            reason: h["burrow-dlq-reason"] ?? "?",
            subject: h["burrow-dlq-subject"] ?? m.subject,
            seq: h["burrow-dlq-seq"] ?? "?",
            deliveries: h["burrow-dlq-deliveries"] ?? "?",
            data: m.data ?? `(${Math.floor((m.dataBase64.length * 3) / 4)} bytes, binary)`,
          };
          setLetters((old) => [letter, ...old].slice(0, MAX_KEPT));
        }
        if (!controller.signal.aborted) setStatus("ended by the server");
      } catch (err) {
        if (controller.signal.aborted) return;
        setStatus("failed");
        setError(err instanceof Error ? err.message : String(err));
      }
    })();
    return () => controller.abort();
  }, []);
  return (
    <div class="dead-letters">
      <div class="panel-status">
        <span id="dlq-status">{status}</span> · {letters.length} since this page opened
      </div>
      {error && <p class="error" role="alert">{error}</p>}
      {letters.length > 0 && (
        <div class="table-wrap">
          <table id="dead-letters">
            <thead>
              <tr>
                <th>At</th>
                <th>From</th>
                <th>Reason</th>
                <th>Deliveries</th>
                <th>Subject · seq</th>
                <th>Data</th>
              </tr>
            </thead>
            <tbody>
              {letters.map((d) => (
                <tr key={d.n} data-source={d.source} data-reason={d.reason}>
                  <td>{d.at.slice(11, 19)}</td>
                  <td>{d.source}</td>
                  <td class="state error">{d.reason}</td>
                  <td>{d.deliveries}</td>
                  <td><code>{d.subject}</code> · {d.seq}</td>
                  <td class="metadata">{d.data}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
