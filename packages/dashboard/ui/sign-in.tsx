// Sign-in with an API key: checked against the API (E2B's GET /teams: the key's teams, answered by this server alone)
// before it is kept for this tab's session. Not a sandbox list: on a node of a cluster that fans out to every node,
// and one unreachable node would make a good key look refused.
import { useState } from "preact/hooks";

export function SignIn({ onSignedIn }: { onSignedIn: (key: string) => void }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const res = await fetch("/teams", { headers: { "x-api-key": key.trim() } });
      if (res.ok) onSignedIn(key.trim());
      else setError(((await res.json().catch(() => ({}))) as { message?: string }).message ?? `sign-in failed (${res.status})`);
    } catch (err) {
      setError(String(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="sign-in" onSubmit={submit}>
      <h1>Burrow</h1>
      <label>
        API key
        <input id="api-key" type="password" autoComplete="off" value={key} onInput={(e) => setKey(e.currentTarget.value)} />
      </label>
      <button id="sign-in" type="submit" disabled={busy || !key.trim()}>
        Sign in
      </button>
      {error && <p class="error" role="alert">{error}</p>}
    </form>
  );
}
