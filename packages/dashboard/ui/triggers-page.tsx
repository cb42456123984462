// Triggers and their runs: the rules of the key's team (GET /burrow/v1/triggers) and, for the one chosen (?id= in
// the URL, so a view can be shared), its runs drawn as a pipeline — the event that fired it, the run (its state and
// attempts), the result (exit code and output, or the error) — coloured by state, newest first, polled every 2 s.
import { useState } from "preact/hooks";
import { api } from "./api.js";
import "./bus-ops.css";
import { age } from "./format.js";
import { usePoll } from "./use-poll.js";

const POLL_MS = 2_000;

interface Trigger {
  id: string;
  on: Record<string, unknown>;
  in: unknown;
  cmd?: string;
  code?: { language?: string };
  createdAtMs: number;
}

interface Run {
  id: string;
  state: "queued" | "running" | "retrying" | "succeeded" | "dead";
  attempt: number;
  updatedAt: string;
  event: { type: string | null; sandboxId: string | null; path: string | null };
  result: { exitCode: number; sandboxId: string | null; stdout: string; stderr: string } | null;
  error: string | null;
}

function idInUrl(): string | null {
  return new URLSearchParams(location.search).get("id");
}

const describeOn = (on: Record<string, unknown>) => Object.entries(on).map(([k, v]) => `${k}=${String(v)}`).join(" ");

export function TriggersPage() {
  const [selected, setSelected] = useState(idInUrl());
  const { data, error } = usePoll((signal) => api<Trigger[]>("GET", "/burrow/v1/triggers", undefined, signal), POLL_MS, []);
  const choose = (id: string) => {
    history.replaceState(null, "", `?id=${encodeURIComponent(id)}`);
    setSelected(id);
  };
  return (
    <section class="triggers">
      <div class="toolbar">
        <h1>Triggers</h1>
        <span class="count">{data ? `${data.length} ${data.length === 1 ? "rule" : "rules"}` : "loading…"}</span>
      </div>
      {error && <p class="error" role="alert">{error}</p>}
      {data && data.length === 0 && <p class="muted">No trigger rule (POST /burrow/v1/triggers makes one).</p>}
      {data && data.length > 0 && (
        <div class="table-wrap">
          <table id="triggers">
            <thead>
              <tr>
                <th>Rule</th>
                <th>On</th>
                <th>Command</th>
                <th>Made</th>
              </tr>
            </thead>
            <tbody>
              {data.map((t) => (
                <tr key={t.id} data-trigger-id={t.id} class={selected === t.id ? "selected" : ""}>
                  <td><button class="link pick" onClick={() => choose(t.id)}><code>{t.id}</code></button></td>
                  <td class="metadata">{describeOn(t.on)}</td>
                  <td class="metadata" title={t.cmd}>{t.cmd !== undefined ? <code>{t.cmd}</code> : `${t.code?.language ?? "code"} code`}</td>
                  <td>{age(new Date(t.createdAtMs).toISOString())} ago</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {selected && <Runs key={selected} id={selected} />}
    </section>
  );
}

function Runs({ id }: { id: string }) {
  const { data, error } = usePoll((signal) => api<Run[]>("GET", `/burrow/v1/triggers/${encodeURIComponent(id)}/runs?limit=50`, undefined, signal), POLL_MS, [id]);
  const counts = new Map<string, number>();
  for (const r of data ?? []) counts.set(r.state, (counts.get(r.state) ?? 0) + 1);
  return (
    <div class="panel runs" id="runs" data-trigger-id={id}>
      <div class="toolbar">
        <h2>Runs of <code>{id}</code></h2>
        <span class="count">{[...counts].map(([s, n]) => `${n} ${s}`).join(" · ") || (data ? "none yet" : "loading…")}</span>
      </div>
      {error && <p class="error" role="alert">{error}</p>}
      <ol class="pipelines">
        {(data ?? []).map((r) => (
          <li key={r.id} class="pipeline" data-run-id={r.id} data-state={r.state}>
            <div class="stage event">
              <div class="stage-title">event</div>
              <div><code>{r.event.type ?? "?"}</code></div>
              {r.event.path && <div class="muted path">{r.event.path}</div>}
            </div>
            <span class="arrow" aria-hidden="true">→</span>
            <div class={`stage run ${r.state}`}>
              <div class="stage-title">run</div>
              <div class="run-state">{r.state}</div>
              <div class="muted">attempt {r.attempt} · {age(r.updatedAt)} ago</div>
            </div>
            <span class="arrow" aria-hidden="true">→</span>
            <Result run={r} />
          </li>
        ))}
      </ol>
    </div>
  );
}

function Result({ run }: { run: Run }) {
  if (run.result) {
    const ok = run.result.exitCode === 0;
    const out = (run.result.stdout || run.result.stderr).trim();
    return (
      <div class={`stage result ${ok ? "succeeded" : "dead"}`}>
        <div class="stage-title">result</div>
        <div class="exit">exit {run.result.exitCode}</div>
        {out && <pre class="output">{out.slice(-300)}</pre>}
      </div>
    );
  }
  if (run.error) {
    return (
      <div class="stage result dead">
        <div class="stage-title">result</div>
        <div class="error-text">{run.error.slice(0, 300)}</div>
      </div>
    );
  }
  return (
    <div class="stage result pending">
      <div class="stage-title">result</div>
      <div class="muted">waiting</div>
    </div>
  );
}
