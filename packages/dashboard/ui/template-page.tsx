// One template: its builds (newest first, polled every 2 s) with the selected build's log streaming while it runs,
// its tags (add one pointing at a tagged build, remove one) and delete with a confirmation step.
import { useEffect, useState } from "preact/hooks";
import { api } from "./api.js";
import { BuildLog } from "./build-log.js";
import { age } from "./format.js";
import { BASE, navigate } from "./router.js";
import { templateName } from "./templates-page.js";
import { templatePath, type TemplateTag, type TemplateWithBuilds } from "./template-types.js";
import { usePoll } from "./use-poll.js";

const POLL_MS = 2_000;

interface Loaded {
  template: TemplateWithBuilds;
  /** Tags exist once a build is published; a template whose first build runs has none (and answers 404). */
  tags: TemplateTag[];
}

async function load(ref: string, signal: AbortSignal): Promise<Loaded> {
  const template = await api<TemplateWithBuilds>("GET", templatePath(ref), undefined, signal);
  const published = template.builds.some((b) => b.status === "ready");
  const tags = published ? await api<TemplateTag[]>("GET", `${templatePath(template.templateID)}/tags`, undefined, signal) : [];
  return { template, tags };
}

export function TemplatePage({ templateRef }: { templateRef: string }) {
  // While a delete runs the poll stops (its request in flight is aborted first), so nothing asks for the template
  // the moment it is gone and earns a 404.
  const [deleting, setDeleting] = useState<string | null>(null);
  const { data, error, refresh } = usePoll((signal) => (deleting ? untilAborted(signal) : load(templateRef, signal)), POLL_MS, [templateRef, deleting]);
  const [selected, setSelected] = useState<string | null>(null);
  const [actionError, setActionError] = useState<string | null>(null);
  const act = async (label: string, run: () => Promise<unknown>): Promise<boolean> => {
    setActionError(null);
    try {
      await run();
      return true;
    } catch (err) {
      setActionError(`${label}: ${err instanceof Error ? err.message : String(err)}`);
      return false;
    } finally {
      refresh();
    }
  };
  useEffect(() => {
    if (!deleting) return;
    void (async () => {
      try {
        await api("DELETE", templatePath(deleting));
        navigate(`${BASE}templates`);
      } catch (err) {
        setActionError(`delete: ${err instanceof Error ? err.message : String(err)}`);
        setDeleting(null);
      }
    })();
  }, [deleting]);
  const template = data?.template;
  const name = template ? templateName(template) : templateRef;
  const buildID = selected ?? template?.builds[0]?.buildID ?? null;
  return (
    <section class="template">
      <div class="toolbar">
        <h1>
          Template <code id="template-name">{name}</code>
        </h1>
        {template && (
          <span class="muted">
            <code>{template.templateID}</code> · created {age(template.createdAt)} ago · {template.builds.length} build{template.builds.length === 1 ? "" : "s"}
          </span>
        )}
        {template && <DeleteButton name={name} busy={deleting !== null} onDelete={() => setDeleting(template.templateID)} />}
      </div>
      {error && <p class="error" role="alert">{error}</p>}
      {actionError && <p class="error" role="alert">{actionError}</p>}
      {template && data && (
        <div class="panels">
          <div class="panel">
            <h2>Builds</h2>
            <div class="table-wrap">
              <table id="builds">
                <thead>
                  <tr>
                    <th>Build</th>
                    <th>Status</th>
                    <th>Started</th>
                    <th>Took</th>
                    <th>Size</th>
                  </tr>
                </thead>
                <tbody>
                  {template.builds.map((b) => (
                    <tr key={b.buildID} data-build-id={b.buildID} data-status={b.status} class={b.buildID === buildID ? "selected" : ""}>
                      <td>
                        <button class="link" onClick={() => setSelected(b.buildID)}>{b.buildID.slice(0, 8)}</button>
                      </td>
                      <td class={`state ${b.status}`}>{b.status}</td>
                      <td title={b.createdAt}>{age(b.createdAt)} ago</td>
                      <td>{b.finishedAt ? `${Math.max(0, Math.round((Date.parse(b.finishedAt) - Date.parse(b.createdAt)) / 1000))}s` : "–"}</td>
                      <td>{b.cpuCount} vCPU · {b.memoryMB} MiB</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </div>
          <div class="panel">
            <h2>Tags</h2>
            <Tags name={name} tags={data.tags} act={act} />
          </div>
          {buildID && (
            <div class="panel wide">
              <h2>Build log</h2>
              <BuildLog templateID={template.templateID} buildID={buildID} onStatus={(s) => (s === "ready" || s === "error") && refresh()} />
            </div>
          )}
        </div>
      )}
    </section>
  );
}

function Tags({ name, tags, act }: { name: string; tags: TemplateTag[]; act: (label: string, run: () => Promise<unknown>) => Promise<boolean> }) {
  const [tag, setTag] = useState("");
  const [from, setFrom] = useState("");
  if (tags.length === 0) return <p class="muted">No tags until a build is published.</p>;
  const source = from || tags[0]!.tag;
  return (
    <div>
      <ul class="entries" id="tags">
        {tags.map((t) => (
          <li key={t.tag} data-tag={t.tag}>
            <span class="tag">{t.tag}</span> → <code>{t.buildID.slice(0, 8)}</code>
            {t.tag !== "default" && (
              <button class="link remove-tag" onClick={() => void act("remove tag", () => api("DELETE", "/templates/tags", { name, tags: [t.tag] }))}>
                remove
              </button>
            )}
          </li>
        ))}
      </ul>
      <form
        class="inline add-tag"
        onSubmit={(e) => {
          e.preventDefault();
          const clean = tag.trim();
          if (clean) void act("add tag", () => api("POST", "/templates/tags", { target: `${name}:${source}`, tags: [clean] })).then((ok) => ok && setTag(""));
        }}
      >
        <input id="new-tag" placeholder="new tag" value={tag} onInput={(e) => setTag(e.currentTarget.value)} />
        <label class="muted">
          on the build of{" "}
          <select value={source} onChange={(e) => setFrom(e.currentTarget.value)}>
            {tags.map((t) => <option key={t.tag} value={t.tag}>{t.tag}</option>)}
          </select>
        </label>
        <button type="submit" disabled={!tag.trim()}>Add tag</button>
      </form>
    </div>
  );
}

function untilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
}

function DeleteButton({ name, busy, onDelete }: { name: string; busy: boolean; onDelete: () => void }) {
  const [confirming, setConfirming] = useState(false);
  if (busy) return <button class="delete danger" disabled>Deleting…</button>;
  if (!confirming) return <button class="delete danger" onClick={() => setConfirming(true)}>Delete…</button>;
  return (
    <span class="confirm" role="alertdialog">
      Delete <strong>{name}</strong> and all its tags? Running sandboxes keep it until they end.
      <button class="confirm-delete danger" onClick={() => (setConfirming(false), onDelete())}>Delete</button>
      <button class="cancel" onClick={() => setConfirming(false)}>Cancel</button>
    </span>
  );
}
