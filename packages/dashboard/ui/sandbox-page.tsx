// One sandbox: its details, a terminal, a file browser and its logs. The envd access token from
// GET /sandboxes/{id} authorizes the terminal's and the files' calls through the gateway.
import { useEffect, useMemo, useState } from "preact/hooks";
import { api, sandboxPath, type SandboxDetail } from "./api.js";
import { envdClients, type EnvdTarget } from "./envd.js";
import { age } from "./format.js";
import { Files } from "./files.js";
import { Logs } from "./logs.js";
import { BASE, navigate } from "./router.js";
import { closingShells, Terminal } from "./terminal.js";

export function SandboxPage({ id }: { id: string }) {
  const [detail, setDetail] = useState<SandboxDetail | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const controller = new AbortController();
    api<SandboxDetail>("GET", sandboxPath(id), undefined, controller.signal).then(setDetail, (err: unknown) => {
      if (!controller.signal.aborted) setError(err instanceof Error ? err.message : String(err));
    });
    return () => controller.abort();
  }, [id]);
  const target = useMemo<EnvdTarget | null>(() => (detail ? { sandboxId: detail.sandboxID, accessToken: detail.envdAccessToken } : null), [detail]);
  const clients = useMemo(() => (target ? envdClients(target) : null), [target]);
  // Killing closes the terminal, files and log poll first (they unmount with the render that sets `killing`,
  // and the effect runs after it), so their last calls reach envd before the sandbox is gone.
  const [killing, setKilling] = useState(false);
  useEffect(() => {
    if (!killing) return;
    void (async () => {
      await Promise.allSettled([...closingShells]);
      try {
        await api("DELETE", sandboxPath(id));
        navigate(BASE);
      } catch (err) {
        setError(err instanceof Error ? err.message : String(err));
        setKilling(false);
      }
    })();
  }, [killing, id]);

  return (
    <section class="sandbox">
      <div class="toolbar">
        <h1>
          Sandbox <code id="sandbox-id">{id}</code>
        </h1>
        {detail && (
          <span class="muted">
            {detail.state} · {detail.alias ?? detail.templateID} · {detail.cpuCount} CPU · {detail.memoryMB} MiB · up {age(detail.startedAt)}
          </span>
        )}
        <button class="kill danger" disabled={killing} onClick={() => setKilling(true)}>
          {killing ? "Killing…" : "Kill"}
        </button>
      </div>
      {error && <p class="error" role="alert">{error}</p>}
      {detail?.state === "paused" && <p class="muted">Paused: resume it from the list to open a terminal or its files.</p>}
      {target && clients && detail?.state === "running" && !killing && (
        <div class="panels">
          <div class="panel wide">
            <h2>Terminal</h2>
            <Terminal clients={clients} />
          </div>
          <div class="panel">
            <h2>Files</h2>
            <Files target={target} clients={clients} />
          </div>
          <div class="panel">
            <h2>Logs</h2>
            <Logs id={id} />
          </div>
        </div>
      )}
    </section>
  );
}
