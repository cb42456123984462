// The actions of one listed sandbox: pause or resume, set its timeout, fork it, snapshot its files, kill it. Each
// reports through `act`, which shows failures and what a fork or snapshot made.
import { useState } from "preact/hooks";
import { api, sandboxPath, type ListedSandbox } from "./api.js";

export type Act = (label: string, run: () => Promise<string | void>) => Promise<void>;

interface ForkResult {
  sandbox?: { sandboxID: string };
  error?: { code: number; message: string };
}

async function fork(id: string): Promise<string> {
  const results = await api<ForkResult[]>("POST", `${sandboxPath(id)}/fork`, { count: 1 });
  const failed = results.find((r) => r.error);
  if (failed?.error) throw new Error(failed.error.message);
  return `forked ${id} into ${results.map((r) => r.sandbox?.sandboxID).join(", ")}`;
}

async function snapshot(id: string): Promise<string> {
  const info = await api<{ snapshotID: string }>("POST", `${sandboxPath(id)}/snapshots`, {});
  return `snapshot of ${id}: ${info.snapshotID} (use it as a template)`;
}

/** `onKill` runs before the kill is sent (the list stops polling the sandbox's metrics). */
export function SandboxActions({ sandbox, act, onKill }: { sandbox: ListedSandbox; act: Act; onKill: (id: string) => void }) {
  const id = sandbox.sandboxID;
  return (
    <>
      {sandbox.state === "running" ? (
        <button class="pause" onClick={() => act("pause", () => api("POST", `${sandboxPath(id)}/pause`, {}))}>Pause</button>
      ) : (
        <button class="resume" onClick={() => act("resume", () => api("POST", `${sandboxPath(id)}/connect`, { timeout: 300 }))}>Resume</button>
      )}
      <TimeoutButton onSet={(seconds) => act("set timeout", () => api("POST", `${sandboxPath(id)}/timeout`, { timeout: seconds }))} />
      <button class="fork" disabled={sandbox.state !== "running"} onClick={() => act("fork", () => fork(id))}>Fork</button>
      <button class="snapshot" onClick={() => act("snapshot", () => snapshot(id))}>Snapshot</button>
      <button class="kill danger" onClick={() => (onKill(id), act("kill", () => api("DELETE", sandboxPath(id))))}>Kill</button>
    </>
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
