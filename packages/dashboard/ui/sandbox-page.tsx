// One sandbox: its settings, CPU/memory/disk charts, checkpoint tree and events, and while it runs a terminal, its
// processes, a file browser and its logs. The envd access token from GET /sandboxes/{id} authorizes the envd calls
// through the gateway. Killing and rolling back close the envd panels first (they unmount with the render that
// sets `closing`), so that their last calls reach envd before it goes away.
import { useEffect, useMemo, useState } from "preact/hooks";
import { api, sandboxPath, type SandboxDetail } from "./api.js";
import { CheckpointTree } from "./checkpoint-tree.js";
import { envdClients, type EnvdTarget } from "./envd.js";
import { age } from "./format.js";
import { Files } from "./files.js";
import { Logs } from "./logs.js";
import { Processes } from "./processes.js";
import { BASE, navigate } from "./router.js";
import { SandboxCharts } from "./sandbox-charts.js";
import { SandboxEvents } from "./sandbox-events.js";
import { SandboxSettings } from "./sandbox-settings.js";
import { closingShells, Terminal } from "./terminal.js";
import { useLifecycleEvents } from "./live-lifecycle.js";
import { usePoll } from "./use-poll.js";

/** The safety net: its lifecycle events (live-lifecycle.ts) reload it at once. */
const DETAIL_POLL_MS = 20_000;

/** Resolves once the envd panels have unmounted (a render has run) and their shells are killed. */
async function envdPanelsClosed(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 50));
  await Promise.allSettled([...closingShells]);
}

/** Never resolves; rejects when `signal` aborts (usePoll drops that). */
function untilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
}

export function SandboxPage({ id }: { id: string }) {
  const [generation, setGeneration] = useState(0);
  const [closing, setClosing] = useState<"kill" | "rollback" | null>(null);
  const killing = closing === "kill";
  // Ended elsewhere (an SDK kill, its timeout), as its lifecycle event says: the page stays, marked, and stops asking.
  const [ended, setEnded] = useState<string | null>(null);
  // Not polled while being killed or once ended: an answer after the kill would be a 404.
  const { data: detail, error: loadError, refresh } = usePoll(
    (signal) => (killing || ended ? untilAborted(signal) : api<SandboxDetail>("GET", sandboxPath(id), undefined, signal)),
    DETAIL_POLL_MS,
    [id, generation, killing, ended],
  );
  useLifecycleEvents((event) => {
    if (event === null) refresh();
    else if (event.sandboxID !== id) return;
    else if (event.type === "killed" || event.type === "timed_out") setEnded(event.type === "killed" ? "killed" : "timed out");
    else refresh();
  });
  const [error, setError] = useState<string | null>(null);
  // Only a new token makes new clients (a new terminal): the detail itself is polled.
  const sandboxId = detail?.sandboxID;
  const token = detail?.envdAccessToken;
  const target = useMemo<EnvdTarget | null>(() => (sandboxId && token ? { sandboxId, accessToken: token } : null), [sandboxId, token, generation]);
  const clients = useMemo(() => (target ? envdClients(target) : null), [target]);
  useEffect(() => {
    if (closing !== "kill") return;
    void (async () => {
      await envdPanelsClosed();
      try {
        await api("DELETE", sandboxPath(id));
        navigate(BASE);
      } catch (err) {
        setError(err instanceof Error ? err.message : String(err));
        setClosing(null);
      }
    })();
  }, [closing, id]);
  const rollback = async (checkpointId: string) => {
    setClosing("rollback");
    try {
      await envdPanelsClosed();
      await api("POST", `/burrow/v1${sandboxPath(id)}/rollback`, { checkpointID: checkpointId });
    } finally {
      setGeneration((g) => g + 1);
      setClosing(null);
    }
  };
  const running = detail?.state === "running";
  const envdOpen = target && clients && running && closing === null && ended === null;

  return (
    <section class="sandbox">
      <div class="toolbar">
        <h1>
          Sandbox <code id="sandbox-id">{id}</code>
        </h1>
        {detail && (
          <span class="muted" id="sandbox-summary">
            {detail.state} · {detail.alias ?? detail.templateID} · {detail.cpuCount} CPU · {detail.memoryMB} MiB · up {age(detail.startedAt)}
          </span>
        )}
        <button class="kill danger" disabled={closing !== null} onClick={() => setClosing("kill")}>
          {closing === "kill" ? "Killing…" : "Kill"}
        </button>
      </div>
      {ended && (
        <p class="notice" id="sandbox-ended">
          This sandbox was {ended}.
        </p>
      )}
      {(error ?? loadError) && <p class="error" role="alert">{error ?? loadError}</p>}
      {detail?.state === "paused" && <p class="muted">Paused: resume it from the list to open a terminal, its processes or its files.</p>}
      {closing === "rollback" && <p class="muted" id="rolling-back">Rolling back: its processes restart…</p>}
      <div class="panels">
        {envdOpen && (
          <div class="panel wide">
            <h2>Terminal</h2>
            <Terminal key={generation} clients={clients} />
          </div>
        )}
        {detail && closing !== "kill" && !ended && (
          <div class="panel wide">
            <h2>Resources</h2>
            <SandboxCharts id={id} />
          </div>
        )}
        {envdOpen && (
          <div class="panel">
            <h2>Processes</h2>
            <Processes key={generation} clients={clients} />
          </div>
        )}
        {detail && (
          <div class="panel">
            <h2>Settings</h2>
            <SandboxSettings detail={detail} />
          </div>
        )}
        {envdOpen && (
          <div class="panel">
            <h2>Files</h2>
            <Files key={generation} target={target} clients={clients} />
          </div>
        )}
        {envdOpen && (
          <div class="panel">
            <h2>Logs</h2>
            <Logs id={id} />
          </div>
        )}
        {detail && closing !== "kill" && !ended && (
          <div class="panel">
            <h2>Checkpoints</h2>
            <CheckpointTree id={id} running={running} onRollback={rollback} />
          </div>
        )}
        {detail && closing !== "kill" && (
          <div class="panel">
            <h2>Events</h2>
            <SandboxEvents id={id} />
          </div>
        )}
      </div>
    </section>
  );
}
