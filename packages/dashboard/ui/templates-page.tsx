// The templates page: every published template (name, tags, build status, size, created), polled every 3 s, and a
// box that opens a template by name or id, so one whose first build is still running (not listed until it is
// published) can be followed too.
import { useState } from "preact/hooks";
import { api } from "./api.js";
import { age } from "./format.js";
import { Link } from "./link.js";
import { BASE, navigate } from "./router.js";
import type { ListedTemplate } from "./template-types.js";
import { usePoll } from "./use-poll.js";

const POLL_MS = 3_000;

export const templatePage = (ref: string) => `${BASE}templates/${encodeURIComponent(ref)}`;

export function templateName(t: { aliases: string[]; names: string[]; templateID: string }): string {
  return t.names[0] ?? t.aliases[0] ?? t.templateID;
}

export function TemplatesPage() {
  const { data, error } = usePoll(
    (signal) => api<ListedTemplate[]>("GET", "/templates", undefined, signal).then((list) => list.slice().sort((a, b) => b.createdAt.localeCompare(a.createdAt))),
    POLL_MS,
    [],
  );
  const [ref, setRef] = useState("");
  return (
    <section class="templates">
      <div class="toolbar">
        <h1>Templates</h1>
        <form class="inline" onSubmit={(e) => (e.preventDefault(), ref.trim() && navigate(templatePage(ref.trim())))}>
          <input id="template-ref" placeholder="open by name or id" value={ref} onInput={(e) => setRef(e.currentTarget.value)} />
          <button type="submit" disabled={!ref.trim()}>Open</button>
        </form>
        <span class="count">{data ? `${data.length} template${data.length === 1 ? "" : "s"}` : "loading…"}</span>
      </div>
      {error && <p class="error" role="alert">{error}</p>}
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th>Template</th>
              <th>Tags</th>
              <th>Status</th>
              <th>Size</th>
              <th>Created</th>
              <th>ID</th>
            </tr>
          </thead>
          <tbody>
            {data?.map((t) => (
              <tr key={t.templateID} data-template-id={t.templateID}>
                <td>
                  <Link href={templatePage(t.templateID)} class="open">{templateName(t)}</Link>
                </td>
                <td class="tags">{t.tags.map((tag) => <span class="tag" key={tag}>{tag}</span>)}</td>
                <td class={`state ${t.buildStatus}`}>{t.buildStatus}</td>
                <td>{t.cpuCount} vCPU · {t.memoryMB} MiB</td>
                <td title={t.createdAt}>{age(t.createdAt)} ago</td>
                <td><code>{t.templateID}</code></td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
