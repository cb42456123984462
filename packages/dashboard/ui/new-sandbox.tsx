// The "new sandbox" form: template, timeout and metadata (key=value pairs, as the list filter), created with E2B's
// POST /v2/sandboxes like the SDK does.
import { useState } from "preact/hooks";
import { api } from "./api.js";
import { metadataPairs } from "./metadata.js";
import type { Act } from "./sandbox-actions.js";

export function NewSandbox({ act, onClose }: { act: Act; onClose: () => void }) {
  const [template, setTemplate] = useState("base");
  const [timeout, setTimeoutValue] = useState("300");
  const [metadata, setMetadata] = useState("");
  const seconds = Number(timeout);
  const pairs = metadataPairs(metadata);
  const valid = template.trim() !== "" && Number.isInteger(seconds) && seconds > 0 && pairs !== null;
  const submit = (e: Event) => {
    e.preventDefault();
    if (!valid) return;
    onClose();
    void act("create", async () => {
      const created = await api<{ sandboxID: string }>("POST", "/v2/sandboxes", { templateID: template.trim(), timeout: seconds, metadata: Object.fromEntries(pairs) });
      return `created ${created.sandboxID}`;
    });
  };
  return (
    <form class="inline new-sandbox" id="new-sandbox" onSubmit={submit}>
      <label>
        Template <input name="template" value={template} onInput={(e) => setTemplate(e.currentTarget.value)} />
      </label>
      <label>
        Timeout (s) <input name="timeout" type="number" min="1" value={timeout} onInput={(e) => setTimeoutValue(e.currentTarget.value)} />
      </label>
      <label>
        Metadata <input name="metadata" class={pairs ? "" : "invalid"} placeholder="key=value, …" value={metadata} onInput={(e) => setMetadata(e.currentTarget.value)} />
      </label>
      <button type="submit" disabled={!valid}>Create</button>
      <button type="button" onClick={onClose}>Cancel</button>
    </form>
  );
}
