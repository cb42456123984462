// The sandbox's processes as envd lists them (Process.List through the gateway), polled every 3 s; each can be
// sent SIGTERM or SIGKILL.
import { useState } from "preact/hooks";
import { processPb } from "@burrow/protocol";
import type { EnvdClients } from "./envd.js";
import { usePoll } from "./use-poll.js";

const POLL_MS = 3_000;

export function Processes({ clients }: { clients: EnvdClients }) {
  const { data, error, refresh } = usePoll(async (signal) => (await clients.process.list({}, { signal })).processes.slice().sort((a, b) => a.pid - b.pid), POLL_MS, [clients]);
  const [signalError, setSignalError] = useState<string | null>(null);
  const send = async (pid: number, signal: processPb.Signal) => {
    setSignalError(null);
    try {
      await clients.process.sendSignal({ process: { selector: { case: "pid", value: pid } }, signal });
    } catch (err) {
      setSignalError(err instanceof Error ? err.message : String(err));
    }
    refresh();
  };
  return (
    <div class="processes">
      {(error ?? signalError) && <p class="error" role="alert">{error ?? signalError}</p>}
      <table id="process-list">
        <thead>
          <tr>
            <th>PID</th>
            <th>Command</th>
            <th>Tag</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {data?.map((p) => (
            <tr key={p.pid} data-pid={p.pid}>
              <td>{p.pid}</td>
              <td class="cmd">{[p.config?.cmd ?? "", ...(p.config?.args ?? [])].join(" ")}</td>
              <td>{p.tag ?? ""}</td>
              <td class="actions">
                <button onClick={() => send(p.pid, processPb.Signal.SIGTERM)}>Term</button>
                <button class="danger" onClick={() => send(p.pid, processPb.Signal.SIGKILL)}>Kill</button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {data?.length === 0 && <p class="muted">No processes started through envd.</p>}
    </div>
  );
}
