// The agent bus page: live messages on a subject pattern (SSE), a publish form, the agents that send heartbeats
// with their up/down state (GET /burrow/v1/agents every 2 s), queues with their depth and dead letters (inspect,
// requeue, drop) and dead letters as they are moved. The pattern is in the URL (?subject=), so a view can be
// shared and survives a reload.
import { useState } from "preact/hooks";
import { api } from "./api.js";
import { BusMessages } from "./bus-messages.js";
import { DeadLetters } from "./dead-letters.js";
import { QueuesPanel } from "./queues-panel.js";
import { age } from "./format.js";
import { usePoll } from "./use-poll.js";

const AGENTS_POLL_MS = 2_000;

interface AgentStatus {
  agentId: string;
  group?: string;
  meta?: Record<string, string>;
  state: string;
  lastSeenMs: number;
}

function subjectInUrl(): string {
  return new URLSearchParams(location.search).get("subject") ?? "";
}

export function BusPage() {
  const [pattern, setPattern] = useState(subjectInUrl());
  const [draft, setDraft] = useState(pattern);
  const subscribe = (e: Event) => {
    e.preventDefault();
    const next = draft.trim();
    history.replaceState(null, "", next ? `?subject=${encodeURIComponent(next)}` : location.pathname);
    setPattern(next);
  };
  return (
    <section class="bus">
      <div class="toolbar">
        <h1>Agent bus</h1>
        <form class="inline" onSubmit={subscribe}>
          <input id="bus-subject" placeholder="subject pattern, e.g. orders.>" value={draft} onInput={(e) => setDraft(e.currentTarget.value)} />
          <button id="bus-subscribe" type="submit" disabled={!draft.trim()}>Subscribe</button>
        </form>
      </div>
      <div class="panels">
        <div class="panel wide">
          <h2>Messages</h2>
          {pattern ? <BusMessages pattern={pattern} /> : <p class="muted">Name a subject pattern (`*` one token, `&gt;` the rest) to watch it live.</p>}
          <Publish defaultSubject={pattern.replace(/\.?[*>].*$/, "")} />
        </div>
        <div class="panel wide">
          <h2>Agents</h2>
          <Agents />
        </div>
        <div class="panel wide">
          <h2>Queues</h2>
          <QueuesPanel />
        </div>
        <div class="panel wide">
          <h2>Dead letters as they are moved</h2>
          <DeadLetters />
        </div>
      </div>
    </section>
  );
}

function Publish({ defaultSubject }: { defaultSubject: string }) {
  const [subject, setSubject] = useState("");
  const [data, setData] = useState("");
  const [result, setResult] = useState<string | null>(null);
  const target = subject.trim() || defaultSubject;
  const send = async (e: Event) => {
    e.preventDefault();
    try {
      await api("POST", "/burrow/v1/bus/publish", { subject: target, data });
      setResult(`published to ${target}`);
      setData("");
    } catch (err) {
      setResult(`publish: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
  return (
    <form class="inline publish" onSubmit={send}>
      <input id="publish-subject" placeholder={defaultSubject || "subject"} value={subject} onInput={(e) => setSubject(e.currentTarget.value)} />
      <input id="publish-data" placeholder="message" value={data} onInput={(e) => setData(e.currentTarget.value)} />
      <button type="submit" disabled={!target}>Publish</button>
      {result && <span class="muted">{result}</span>}
    </form>
  );
}

function Agents() {
  const { data, error } = usePoll((signal) => api<AgentStatus[]>("GET", "/burrow/v1/agents", undefined, signal), AGENTS_POLL_MS, []);
  if (error) return <p class="error" role="alert">{error}</p>;
  if (!data) return <p class="muted">loading…</p>;
  if (data.length === 0) return <p class="muted">No agent has sent a heartbeat (POST /burrow/v1/agents/&#123;id&#125;/heartbeat).</p>;
  return (
    <div class="table-wrap">
      <table id="agents">
        <thead>
          <tr>
            <th>Agent</th>
            <th>State</th>
            <th>Group</th>
            <th>Last heartbeat</th>
            <th>Meta</th>
          </tr>
        </thead>
        <tbody>
          {data
            .slice()
            .sort((a, b) => a.agentId.localeCompare(b.agentId))
            .map((a) => (
              <tr key={a.agentId} data-agent-id={a.agentId} data-state={a.state}>
                <td><code>{a.agentId}</code></td>
                <td class={`state ${a.state}`}>{a.state}</td>
                <td>{a.group ?? "–"}</td>
                <td>{age(new Date(a.lastSeenMs).toISOString())} ago</td>
                <td class="metadata">{Object.entries(a.meta ?? {}).map(([k, v]) => `${k}=${v}`).join(", ")}</td>
              </tr>
            ))}
        </tbody>
      </table>
    </div>
  );
}
