// A sandbox's checkpoint tree (Burrow's /burrow/v1 checkpoints), drawn as nested lists: each checkpoint under its
// parent, the one the sandbox's files now descend from marked current. A checkpoint can be rolled back to (in
// place: the page closes its envd panels around it, see sandbox-page.tsx) or branched into a new sandbox.
import { useState } from "preact/hooks";
import type { CheckpointTreeWire, CheckpointWire } from "@burrow/protocol";
import { api, sandboxPath } from "./api.js";
import { bytes } from "./format.js";
import { Link } from "./link.js";
import { BASE } from "./router.js";
import { usePoll } from "./use-poll.js";

const POLL_MS = 5_000;

interface BranchResult {
  sandbox?: { sandboxID: string };
  error?: { message: string };
}

export function CheckpointTree({ id, running, onRollback }: { id: string; running: boolean; onRollback: (checkpointId: string) => Promise<void> }) {
  const { data, error, refresh } = usePoll((signal) => api<CheckpointTreeWire>("GET", `/burrow/v1${sandboxPath(id)}/checkpoints`, undefined, signal), POLL_MS, [id]);
  const [busy, setBusy] = useState<string | null>(null);
  const [actionError, setActionError] = useState<string | null>(null);
  const [branches, setBranches] = useState<string[]>([]);
  const run = async (what: string, action: () => Promise<void>) => {
    setBusy(what);
    setActionError(null);
    try {
      await action();
    } catch (err) {
      setActionError(`${what}: ${err instanceof Error ? err.message : String(err)}`);
    }
    setBusy(null);
    refresh();
  };
  // The label is read from the form when it is submitted, not kept in state: a render between typing and submitting
  // (a poll's answer) can never put back an older value, and nothing typed is lost.
  const take = (form: HTMLFormElement) =>
    run("checkpoint", async () => {
      const label = String(new FormData(form).get("label") ?? "").trim();
      await api("POST", `/burrow/v1${sandboxPath(id)}/checkpoints`, label ? { label } : {});
      form.reset();
    });
  const branch = (c: CheckpointWire) =>
    run("branch", async () => {
      const results = await api<BranchResult[]>("POST", `/burrow/v1/checkpoints/${encodeURIComponent(c.checkpointID)}/branch`, { count: 1 });
      const failed = results.find((r) => r.error);
      if (failed?.error) throw new Error(failed.error.message);
      setBranches((old) => [...results.flatMap((r) => (r.sandbox ? [r.sandbox.sandboxID] : [])), ...old]);
    });
  const children = new Map<string | null, CheckpointWire[]>();
  for (const c of data?.checkpoints ?? []) children.set(c.parentID, [...(children.get(c.parentID) ?? []), c]);
  const draw = (parent: string | null) => (
    <ul class={parent === null ? "tree" : ""}>
      {(children.get(parent) ?? []).map((c) => (
        <li key={c.checkpointID} data-checkpoint-id={c.checkpointID}>
          <span class={`node${c.current ? " current" : ""}`}>
            <span class="name">{c.label ?? c.checkpointID}</span>
            <span class="muted">
              {c.createdAt.slice(11, 19)} · {bytes(c.sizeBytes)}
              {c.current ? " · current" : ""}
            </span>
            <button class="rollback" disabled={busy !== null || !running} onClick={() => run("rollback", () => onRollback(c.checkpointID))}>
              Roll back
            </button>
            <button class="branch" disabled={busy !== null} onClick={() => branch(c)}>
              Branch
            </button>
          </span>
          {children.has(c.checkpointID) && draw(c.checkpointID)}
        </li>
      ))}
    </ul>
  );
  return (
    <div class="checkpoints" id="checkpoint-tree">
      {(error ?? actionError) && <p class="error" role="alert">{error ?? actionError}</p>}
      <form class="inline" onSubmit={(e) => (e.preventDefault(), void take(e.currentTarget))}>
        <input id="checkpoint-label" name="label" placeholder="label (optional)" />
        <button id="checkpoint-take" type="submit" disabled={busy !== null || !running}>
          Checkpoint now
        </button>
        {busy && <span class="muted">{busy}…</span>}
      </form>
      {data && data.checkpoints.length === 0 ? <p class="muted">No checkpoints yet.</p> : draw(null)}
      {branches.length > 0 && (
        <p class="muted" id="branches">
          Branched:{" "}
          {branches.map((b) => (
            <Link key={b} href={`${BASE}sandboxes/${b}`}>
              {b}{" "}
            </Link>
          ))}
        </p>
      )}
      <p class="muted">Checkpoints keep files only: processes restart on rollback and in branches.</p>
    </div>
  );
}
