// One build's log, live: the status endpoint the SDK follows (logsOffset pages), asked every 500 ms while the build
// waits or runs, each answer's entries appended; it stops asking once the build is ready or failed.
import { useEffect, useRef, useState } from "preact/hooks";
import { api } from "./api.js";
import type { BuildLogEntry, BuildStatus, BuildStatusPage } from "./template-types.js";
import { templatePath } from "./template-types.js";

const LIVE_MS = 500;

export function BuildLog({ templateID, buildID, onStatus }: { templateID: string; buildID: string; onStatus?: (status: BuildStatus) => void }) {
  const [entries, setEntries] = useState<BuildLogEntry[]>([]);
  const [status, setStatus] = useState<BuildStatus | null>(null);
  const [reason, setReason] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const pre = useRef<HTMLPreElement>(null);
  const notify = useRef(onStatus);
  notify.current = onStatus;
  useEffect(() => {
    setEntries([]);
    setStatus(null);
    setReason(null);
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let offset = 0;
    const round = async () => {
      try {
        const page = await api<BuildStatusPage>("GET", `${templatePath(templateID)}/builds/${encodeURIComponent(buildID)}/status?logsOffset=${offset}`, undefined, controller.signal);
        if (controller.signal.aborted) return;
        offset += page.logEntries.length;
        if (page.logEntries.length > 0) setEntries((old) => [...old, ...page.logEntries]);
        setStatus(page.status);
        setReason(page.reason?.message ?? null);
        setError(null);
        notify.current?.(page.status);
        // A finished build's log is drained at once, page after page, until a page comes back empty.
        const finished = page.status === "ready" || page.status === "error";
        if (finished && page.logEntries.length === 0) return;
        timer = setTimeout(() => void round(), finished ? 0 : LIVE_MS);
      } catch (err) {
        if (controller.signal.aborted) return;
        setError(err instanceof Error ? err.message : String(err));
        timer = setTimeout(() => void round(), 2_000);
      }
    };
    void round();
    return () => {
      controller.abort();
      clearTimeout(timer);
    };
  }, [templateID, buildID]);
  // Follow the tail unless the reader scrolled up.
  useEffect(() => {
    const el = pre.current;
    if (el && el.scrollHeight - el.scrollTop - el.clientHeight < 80) el.scrollTop = el.scrollHeight;
  }, [entries]);
  return (
    <div class="build-log">
      <div class="panel-status">
        build <code>{buildID}</code>: <span id="build-status" class={`state ${status ?? ""}`}>{status ?? "loading…"}</span>
        {reason && <span class="error"> — {reason}</span>}
      </div>
      {error && <p class="error" role="alert">{error}</p>}
      <pre id="build-logs" ref={pre}>
        {entries.map((l) => `${l.timestamp.slice(11, 23)} ${l.level.padEnd(5)} ${l.message}\n`).join("")}
      </pre>
    </div>
  );
}
