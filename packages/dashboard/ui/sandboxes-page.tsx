// The sandboxes page: the team's sandboxes polled every 2 s with their latest CPU and memory sample, a metadata
// filter (key=value pairs, as the SDK's list filter), and the actions kill, pause, resume and set timeout.
import { useState } from "preact/hooks";
import { api, apiWithHeaders, sandboxPath, type ListedSandbox, type MetricSample } from "./api.js";
import { age, bytes } from "./format.js";
import { BASE, navigate } from "./router.js";
import { usePoll } from "./use-poll.js";

const POLL_MS = 2_000;
/** Metrics are one request per sandbox: only this many running sandboxes get a sample per round. */
const METRICS_LIMIT = 50;
/** The list endpoint's largest page, and how many pages a round follows (X-Next-Token). */
const PAGE_SIZE = 100;
const MAX_PAGES = 20;

interface Row extends ListedSandbox {
  metric?: MetricSample | undefined;
}

/** "a=1, b=2" → the list endpoint's metadata query (percent-encoded pairs joined like a query string). */
export function metadataQuery(filter: string): string | null {
  const pairs = filter
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean)
    .map((p) => p.split("=").map((s) => s.trim()));
  if (pairs.some((p) => p.length !== 2 || !p[0])) return null;
  return new URLSearchParams(pairs as [string, string][]).toString();
}

async function loadRows(filter: string, signal: AbortSignal): Promise<Row[]> {
  const list: ListedSandbox[] = [];
  let next: string | null = null;
  for (let page = 0; page < MAX_PAGES; page++) {
    const query = new URLSearchParams({ state: "running,paused", limit: String(PAGE_SIZE) });
    const metadata = metadataQuery(filter);
    if (metadata) query.set("metadata", metadata);
    if (next) query.set("nextToken", next);
    const { data, headers } = await apiWithHeaders<ListedSandbox[]>("GET", `/v2/sandboxes?${query}`, undefined, signal);
    list.push(...data);
    next = headers.get("x-next-token");
    if (!next) break;
  }
  list.sort((a, b) => b.startedAt.localeCompare(a.startedAt));
  const running = list.filter((s) => s.state === "running").slice(0, METRICS_LIMIT);
  const samples = await Promise.all(
    running.map((s) =>
      api<MetricSample[]>("GET", `${sandboxPath(s.sandboxID)}/metrics`, undefined, signal).then(
        (m) => [s.sandboxID, m.at(-1)] as const,
        () => [s.sandboxID, undefined] as const,
      ),
    ),
  );
  const byId = new Map(samples);
  return list.map((s) => ({ ...s, metric: byId.get(s.sandboxID) }));
}

export function SandboxesPage() {
  const [filter, setFilter] = useState("");
  const [actionError, setActionError] = useState<string | null>(null);
  const { data, error, refresh } = usePoll((signal) => loadRows(filter, signal), POLL_MS, [filter]);
  const act = async (label: string, run: () => Promise<unknown>) => {
    setActionError(null);
    try {
      await run();
    } catch (err) {
      setActionError(`${label}: ${err instanceof Error ? err.message : String(err)}`);
    }
    refresh();
  };
  const filterValid = metadataQuery(filter) !== null;
  return (
    <section class="sandboxes">
      <div class="toolbar">
        <h1>Sandboxes</h1>
        <input
          id="metadata-filter"
          class={filterValid ? "" : "invalid"}
          placeholder="metadata filter: key=value, …"
          value={filter}
          onChange={(e) => setFilter(e.currentTarget.value)}
        />
        <span class="count">{data ? `${data.length} sandbox${data.length === 1 ? "" : "es"}` : "loading…"}</span>
      </div>
      {error && <p class="error" role="alert">{error}</p>}
      {actionError && <p class="error" role="alert">{actionError}</p>}
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th>Sandbox</th>
              <th>State</th>
              <th>Template</th>
              <th>Age</th>
              <th>CPU</th>
              <th>Memory</th>
              <th>Metadata</th>
              <th>Actions</th>
            </tr>
          </thead>
          <tbody>
            {data?.map((s) => (
              <tr key={s.sandboxID} data-sandbox-id={s.sandboxID} data-state={s.state}>
                <td>
                  <a href={`${BASE}sandboxes/${s.sandboxID}`} class="open" onClick={(e) => (e.preventDefault(), navigate(`${BASE}sandboxes/${s.sandboxID}`))}>
                    {s.sandboxID}
                  </a>
                </td>
                <td class={`state ${s.state}`}>{s.state}</td>
                <td>{s.alias ?? s.templateID}</td>
                <td>{age(s.startedAt)}</td>
                <td>{s.metric ? `${s.metric.cpuUsedPct.toFixed(1)}% of ${s.cpuCount}` : "–"}</td>
                <td>{s.metric ? `${bytes(s.metric.memUsed)} / ${bytes(s.metric.memTotal)}` : `${s.memoryMB} MiB`}</td>
                <td class="metadata">{Object.entries(s.metadata).map(([k, v]) => `${k}=${v}`).join(", ")}</td>
                <td class="actions">
                  {s.state === "running" ? (
                    <button class="pause" onClick={() => act("pause", () => api("POST", `${sandboxPath(s.sandboxID)}/pause`, {}))}>Pause</button>
                  ) : (
                    <button class="resume" onClick={() => act("resume", () => api("POST", `${sandboxPath(s.sandboxID)}/connect`, { timeout: 300 }))}>Resume</button>
                  )}
                  <TimeoutButton onSet={(seconds) => act("set timeout", () => api("POST", `${sandboxPath(s.sandboxID)}/timeout`, { timeout: seconds }))} />
                  <button class="kill danger" onClick={() => act("kill", () => api("DELETE", sandboxPath(s.sandboxID)))}>Kill</button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function TimeoutButton({ onSet }: { onSet: (seconds: number) => void }) {
  const [open, setOpen] = useState(false);
  const [value, setValue] = useState("300");
  if (!open) return <button class="timeout" onClick={() => setOpen(true)}>Timeout…</button>;
  const seconds = Number(value);
  const valid = Number.isInteger(seconds) && seconds > 0;
  return (
    <span class="timeout-edit">
      <input type="number" min="1" value={value} onInput={(e) => setValue(e.currentTarget.value)} aria-label="timeout in seconds" />
      <button disabled={!valid} onClick={() => (setOpen(false), onSet(seconds))}>Set</button>
    </span>
  );
}
