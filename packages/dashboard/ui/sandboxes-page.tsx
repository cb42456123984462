// The sandboxes page: the team's sandboxes, reloaded at once on each lifecycle event of the team (live-lifecycle.ts)
// and polled every 20 s only as a safety net (for what the stream missed), a metadata filter (key=value pairs, as the
// SDK's list filter), a "new sandbox" form, per-row actions (sandbox-actions.tsx) and CPU/memory/disk sparklines.
// The table is windowed (virtual-rows.ts) and only the rows on screen fetch their metrics, so 1,000 sandboxes cost a
// few dozen rows and requests.
import { useEffect, useRef, useState } from "preact/hooks";
import { apiWithHeaders, type ListedSandbox } from "./api.js";
import { Sparkline } from "./chart.js";
import { age, bytes } from "./format.js";
import { metadataQuery } from "./metadata.js";
import { loadMetrics, series, type SandboxMetric } from "./metrics.js";
import { NewSandbox } from "./new-sandbox.js";
import { BASE, navigate } from "./router.js";
import { SandboxActions, type Act } from "./sandbox-actions.js";
import { useLifecycleEvents } from "./live-lifecycle.js";
import { usePoll } from "./use-poll.js";
import { useVirtualRows } from "./virtual-rows.js";

/** The safety net: live events do the refreshing. */
const POLL_MS = 20_000;
const METRICS_POLL_MS = 5_000;
/** The sparklines' window. */
const METRICS_SINCE_S = 300;
/** The paged list endpoint's largest page, and how many pages a round follows (X-Next-Token). */
const PAGE_SIZE = 100;
const MAX_PAGES = 20;

async function loadPaged(state: string, metadata: string | null, signal: AbortSignal): Promise<ListedSandbox[]> {
  const list: ListedSandbox[] = [];
  let next: string | null = null;
  for (let page = 0; page < MAX_PAGES; page++) {
    const query = new URLSearchParams({ state, limit: String(PAGE_SIZE) });
    if (metadata) query.set("metadata", metadata);
    if (next) query.set("nextToken", next);
    const { data, headers } = await apiWithHeaders<ListedSandbox[]>("GET", `/v2/sandboxes?${query}`, undefined, signal);
    list.push(...data);
    next = headers.get("x-next-token");
    if (!next) break;
  }
  return list;
}

/**
 * Running sandboxes in one call (E2B's v1 list is not paged: at 1,000 sandboxes, ten pages one after the other took
 * most of the page's time to interactive), paused ones paged beside it. A sandbox changing state between the two
 * answers could come twice: the running entry wins, and the next lifecycle event lists again.
 */
async function loadList(filter: string, signal: AbortSignal): Promise<ListedSandbox[]> {
  const metadata = metadataQuery(filter);
  const runningQuery = metadata ? `?${new URLSearchParams({ metadata })}` : "";
  const [running, paused] = await Promise.all([
    apiWithHeaders<ListedSandbox[]>("GET", `/sandboxes${runningQuery}`, undefined, signal).then((r) => r.data),
    loadPaged("paused", metadata, signal),
  ]);
  const seen = new Set(running.map((s) => s.sandboxID));
  const list = [...running, ...paused.filter((s) => !seen.has(s.sandboxID))];
  return list.sort((a, b) => b.startedAt.localeCompare(a.startedAt) || a.sandboxID.localeCompare(b.sandboxID));
}

/**
 * Samples of the sandboxes on screen, kept across scrolling (a row that comes back shows its last ones at once).
 * `forget` stops asking for a sandbox at once, aborting the round in flight: one being killed would answer 404.
 */
function useVisibleMetrics(ids: string[]): { metrics: Map<string, SandboxMetric[]>; forget: (id: string) => void } {
  const key = ids.join(",");
  // Scrolling changes the window on every frame: fetch once it has stopped for a moment.
  const [settled, setSettled] = useState(key);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(key), 250);
    return () => clearTimeout(timer);
  }, [key]);
  const cache = useRef(new Map<string, SandboxMetric[]>());
  const forgotten = useRef(new Set<string>());
  const round = useRef<AbortController | null>(null);
  const { data } = usePoll(
    async (signal) => {
      const controller = new AbortController();
      round.current = controller;
      const linked = AbortSignal.any([signal, controller.signal]);
      const wanted = (settled ? settled.split(",") : []).filter((id) => !forgotten.current.has(id));
      const got = await Promise.all(wanted.map((id) => loadMetrics(id, METRICS_SINCE_S, linked).then((m) => [id, m] as const, () => null)));
      for (const entry of got) if (entry && !forgotten.current.has(entry[0])) cache.current.set(entry[0], entry[1]);
      return new Map(cache.current);
    },
    METRICS_POLL_MS,
    [settled],
  );
  const forget = (id: string) => {
    forgotten.current.add(id);
    cache.current.delete(id);
    round.current?.abort();
  };
  return { metrics: data ?? cache.current, forget };
}

export function SandboxesPage() {
  // The filter lives in the URL too (?metadata=k=v,…), so that a filtered list can be linked to and reloaded.
  const [filter, setFilterState] = useState(() => new URLSearchParams(location.search).get("metadata") ?? "");
  const setFilter = (value: string) => {
    setFilterState(value);
    history.replaceState(null, "", value ? `?${new URLSearchParams({ metadata: value })}` : location.pathname);
  };
  const [creating, setCreating] = useState(false);
  const [actionError, setActionError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const { data, error, refresh } = usePoll((signal) => loadList(filter, signal), POLL_MS, [filter]);
  const live = useLifecycleEvents(() => refresh());
  const scroller = useRef<HTMLDivElement>(null);
  const body = useRef<HTMLTableSectionElement>(null);
  const rows = data ?? [];
  const rowWindow = useVirtualRows(rows.length, scroller, body);
  const shown = rows.slice(rowWindow.start, rowWindow.end);
  const { metrics, forget } = useVisibleMetrics(shown.filter((s) => s.state === "running").map((s) => s.sandboxID));
  const act: Act = async (label, run) => {
    setActionError(null);
    setNotice(null);
    try {
      const said = await run();
      if (said) setNotice(said);
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
        {/* Uncontrolled: with `value={filter}` every render (a live event's reload) put the applied filter back into
            the box, wiping what was typed before Enter. */}
        <input
          id="metadata-filter"
          class={filterValid ? "" : "invalid"}
          placeholder="metadata filter: key=value, …"
          defaultValue={filter}
          onChange={(e) => setFilter(e.currentTarget.value)}
        />
        <span class={`live ${live.status}`} id="live-status" data-reconnects={live.reconnects} title="lifecycle events">
          {live.status === "live" ? "live" : live.status === "connecting" ? "connecting…" : "reconnecting…"}
        </span>
        <span class="count" id="sandbox-count">{data ? `${data.length} sandbox${data.length === 1 ? "" : "es"}` : "loading…"}</span>
        {!creating && (
          <button id="new-sandbox-open" onClick={() => setCreating(true)}>
            New sandbox
          </button>
        )}
      </div>
      {creating && <NewSandbox act={act} onClose={() => setCreating(false)} />}
      {error && <p class="error" role="alert">{error}</p>}
      {actionError && <p class="error" role="alert">{actionError}</p>}
      {notice && <p class="notice" id="notice">{notice}</p>}
      <div class="table-wrap virtual" ref={scroller} onScroll={rowWindow.onScroll}>
        <table>
          <thead>
            <tr>
              <th>Sandbox</th>
              <th>State</th>
              <th>Template</th>
              <th>Age</th>
              <th>CPU</th>
              <th>Memory</th>
              <th>Disk</th>
              <th>Metadata</th>
              <th>Actions</th>
            </tr>
          </thead>
          <tbody ref={body}>
            {rowWindow.before > 0 && <tr class="spacer" style={{ height: `${rowWindow.before}px` }} aria-hidden="true" />}
            {shown.map((s) => (
              <Row key={s.sandboxID} sandbox={s} samples={s.state === "running" ? metrics.get(s.sandboxID) : undefined} act={act} onKill={forget} />
            ))}
            {rowWindow.after > 0 && <tr class="spacer" style={{ height: `${rowWindow.after}px` }} aria-hidden="true" />}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function Row({ sandbox: s, samples, act, onKill }: { sandbox: ListedSandbox; samples: SandboxMetric[] | undefined; act: Act; onKill: (id: string) => void }) {
  const last = samples?.at(-1);
  const href = `${BASE}sandboxes/${s.sandboxID}`;
  return (
    <tr data-sandbox-id={s.sandboxID} data-state={s.state}>
      <td>
        <a href={href} class="open" onClick={(e) => (e.preventDefault(), navigate(href))}>
          {s.sandboxID}
        </a>
      </td>
      <td class={`state ${s.state}`}>{s.state}</td>
      <td>{s.alias ?? s.templateID}</td>
      <td>{age(s.startedAt)}</td>
      <td class="cpu">
        <Sparkline points={series(samples ?? [], (m) => m.cpuUsedPct)} max={100} label="CPU %" /> {last ? `${last.cpuUsedPct.toFixed(1)}% of ${s.cpuCount}` : ""}
      </td>
      <td class="mem">
        <Sparkline points={series(samples ?? [], (m) => m.memUsed)} max={last?.memTotal || s.memoryMB * 1024 * 1024} label="memory" />{" "}
        {last ? `${bytes(last.memUsed)} / ${bytes(last.memTotal)}` : `${s.memoryMB} MiB`}
      </td>
      <td class="disk">
        <Sparkline points={series(samples ?? [], (m) => m.diskUsed)} max={last?.diskTotal || 1} label="disk" /> {last ? bytes(last.diskUsed) : ""}
      </td>
      <td class="metadata" title={Object.entries(s.metadata).map(([k, v]) => `${k}=${v}`).join(", ")}>
        {Object.entries(s.metadata).map(([k, v]) => `${k}=${v}`).join(", ")}
      </td>
      <td class="actions">
        <SandboxActions sandbox={s} act={act} onKill={onKill} />
      </td>
    </tr>
  );
}
