// Queues on the bus page: every queue of the signed-in key's team with its depth (ready, in flight, dead letters),
// polled from GET /burrow/v1/queues, which reads without touching the queues. Inspecting one lists its dead letters
// (payload, headers, attempts, why, when) with requeue and drop, one or all, through the queue's dead-letter routes.
import { useState } from "preact/hooks";
import type { DeadLetterPageWire, QueueDepthWire } from "@burrow/protocol";
import { api } from "./api.js";
import "./bus-ops.css";
import { usePoll } from "./use-poll.js";

const DEPTH_POLL_MS = 1_500;
const LETTERS_POLL_MS = 2_000;

const queuePath = (name: string) => `/burrow/v1/queues/${encodeURIComponent(name)}`;

export function QueuesPanel() {
  const [open, setOpen] = useState<string | null>(null);
  const { data, error, refresh } = usePoll((signal) => api<QueueDepthWire[]>("GET", "/burrow/v1/queues", undefined, signal), DEPTH_POLL_MS, []);
  if (error) return <p class="error" role="alert">{error}</p>;
  if (!data) return <p class="muted">loading…</p>;
  if (data.length === 0) return <p class="muted">No queue yet (POST /burrow/v1/queues/&#123;name&#125;/messages makes one).</p>;
  const queues = data.slice().sort((a, b) => a.name.localeCompare(b.name));
  return (
    <div class="queues">
      <div class="table-wrap">
        <table id="queues">
          <thead>
            <tr>
              <th>Queue</th>
              <th>Ready</th>
              <th>In flight</th>
              <th>Dead letters</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {queues.map((q) => (
              <tr key={q.name} data-queue={q.name} class={open === q.name ? "selected" : ""}>
                <td><code>{q.name}</code></td>
                <td class="ready">{q.ready}</td>
                <td class="in-flight">{q.inFlight}</td>
                <td class={`dead ${q.deadLetters > 0 ? "state error" : ""}`}>{q.deadLetters}</td>
                <td class="actions">
                  <button class="link inspect" onClick={() => setOpen(open === q.name ? null : q.name)}>{open === q.name ? "close" : "dead letters"}</button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {open && <QueueDeadLetters key={open} name={open} onChange={refresh} />}
    </div>
  );
}

function QueueDeadLetters({ name, onChange }: { name: string; onChange: () => void }) {
  const [note, setNote] = useState<string | null>(null);
  const [confirmDrop, setConfirmDrop] = useState(false);
  const [busy, setBusy] = useState(false);
  const { data, error, refresh } = usePoll(
    (signal) => api<DeadLetterPageWire>("GET", `${queuePath(name)}/dead-letters?limit=100`, undefined, signal),
    LETTERS_POLL_MS,
    [name],
  );
  const act = async (what: string, method: string, path: string) => {
    setBusy(true);
    try {
      const r = await api<{ requeued?: number; dropped?: number } | undefined>(method, path);
      setNote(r?.requeued !== undefined ? `requeued ${r.requeued}` : r?.dropped !== undefined ? `dropped ${r.dropped}` : what);
    } catch (err) {
      setNote(`${what}: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      setBusy(false);
      setConfirmDrop(false);
      refresh();
      onChange();
    }
  };
  return (
    <div class="queue-dead-letters" id="queue-dead-letters" data-queue={name}>
      <div class="toolbar">
        <h2>Dead letters of <code>{name}</code></h2>
        <span class="count" id="queue-dead-total">{data ? `${data.total}` : "…"}</span>
        <button id="requeue-all" disabled={busy || !data?.total} onClick={() => void act("requeued all", "POST", `${queuePath(name)}/dead-letters/requeue`)}>Requeue all</button>
        {confirmDrop ? (
          <span class="confirm">
            Drop all {data?.total}?
            <button id="drop-all-confirm" class="danger" disabled={busy} onClick={() => void act("dropped all", "DELETE", `${queuePath(name)}/dead-letters`)}>Drop</button>
            <button onClick={() => setConfirmDrop(false)}>Keep</button>
          </span>
        ) : (
          <button id="drop-all" class="danger" disabled={busy || !data?.total} onClick={() => setConfirmDrop(true)}>Drop all</button>
        )}
        {note && <span class="muted" id="queue-dead-note">{note}</span>}
      </div>
      {error && <p class="error" role="alert">{error}</p>}
      {data && data.items.length === 0 && <p class="muted">None.</p>}
      {data && data.items.length > 0 && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th>Moved</th>
                <th>Why</th>
                <th>Attempts</th>
                <th>Priority</th>
                <th>Headers</th>
                <th>Data</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {data.items.map((d) => (
                <tr key={d.seq} class="dead-letter" data-seq={d.seq} data-reason={d.reason}>
                  <td title={d.time}>{d.time.slice(11, 19)}</td>
                  <td class="state error why" title={d.lastError ?? undefined}>
                    {d.reason === "terminated" ? "given up" : "out of attempts"}
                    {d.lastError && <div class="muted last-error">{d.lastError.slice(0, 120)}</div>}
                  </td>
                  <td class="attempts">{d.attempts}</td>
                  <td>{d.priority ?? "–"}</td>
                  <td class="metadata">{Object.entries(d.headers).map(([k, v]) => `${k}=${v}`).join(", ")}</td>
                  <td class="metadata payload">{d.data ?? `(${Math.floor((d.dataBase64.length * 3) / 4)} bytes, binary)`}</td>
                  <td class="actions">
                    <button class="requeue" disabled={busy} onClick={() => void act(`requeued ${d.seq}`, "POST", `${queuePath(name)}/dead-letters/${d.seq}/requeue`)}>Requeue</button>
                    <button class="drop danger" disabled={busy} onClick={() => void act(`dropped ${d.seq}`, "DELETE", `${queuePath(name)}/dead-letters/${d.seq}`)}>Drop</button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
