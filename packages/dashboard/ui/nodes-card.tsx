// The cluster's nodes on the server page, for the operator (instance admin key) of a node of a cluster: each node's
// state (up, or down when its heartbeats stopped), cordon, version, load (running sandboxes against capacity, free
// memory, warm pool fill) and when it was last heard from; cordon and uncordon from here. GET /burrow/v1/nodes is
// polled only when the server stats said this is a cluster node and the key may manage nodes.
import { useState } from "preact/hooks";
import type { NodeListWire } from "@burrow/protocol";
import { api } from "./api.js";
import { age, bytes } from "./format.js";
import { usePoll } from "./use-poll.js";

const POLL_MS = 2_000;

export function NodesCard({ self }: { self: string }) {
  const { data, error, refresh } = usePoll((signal) => api<NodeListWire>("GET", "/burrow/v1/nodes", undefined, signal), POLL_MS, []);
  const [busy, setBusy] = useState<string | null>(null);
  const [actionError, setActionError] = useState<string | null>(null);
  const setCordon = async (name: string, cordon: boolean) => {
    setBusy(name);
    setActionError(null);
    try {
      await api("POST", `/burrow/v1/nodes/${encodeURIComponent(name)}/${cordon ? "cordon" : "uncordon"}`);
    } catch (err) {
      setActionError(`${cordon ? "cordon" : "uncordon"} ${name}: ${err instanceof Error ? err.message : String(err)}`);
    }
    setBusy(null);
    refresh();
  };
  const nodes = data?.nodes ?? [];
  const up = nodes.filter((n) => n.status === "up").length;
  return (
    <div class="card wide" id="cluster-nodes">
      <h2>Cluster nodes</h2>
      {(error ?? actionError) && <p class="error" role="alert">{error ?? actionError}</p>}
      {data && (
        <p class="muted">
          {up} of {nodes.length} up · this page is served by <code>{self}</code>
        </p>
      )}
      <table>
        <thead>
          <tr>
            <th>Node</th>
            <th>State</th>
            <th>Sandboxes</th>
            <th>Free memory</th>
            <th>Warm pool</th>
            <th>Version</th>
            <th>Last seen</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {nodes.map((n) => (
            <tr key={n.name} data-node={n.name} data-status={n.status} data-cordoned={String(n.cordoned)}>
              <td>
                <code>{n.name}</code>
                {n.name === self && <span class="muted"> (this node)</span>}
              </td>
              <td class={n.status === "down" ? "error" : ""}>
                {n.status}
                {n.cordoned && <span class="muted"> · cordoned</span>}
              </td>
              <td>
                {n.load.runningSandboxes}
                {n.load.capacity !== undefined && <span class="muted"> of {n.load.capacity}</span>}
              </td>
              <td>{bytes(n.load.freeMemoryBytes)}</td>
              <td>{n.load.poolFill.length === 0 ? "–" : n.load.poolFill.map((p) => `${p.template} ${p.ready}/${p.target}`).join(", ")}</td>
              <td>{n.version}</td>
              <td>{age(n.lastSeenAt)} ago</td>
              <td>
                <button class="cordon" disabled={busy !== null} onClick={() => void setCordon(n.name, !n.cordoned)}>
                  {n.cordoned ? "Uncordon" : "Cordon"}
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
