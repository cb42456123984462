// Sign-in with an API key: checked against the API (a list call) before it is kept for this tab's session.
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
      const res = await fetch("/v2/sandboxes?limit=1", { headers: { "x-api-key": key.trim() } });
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
