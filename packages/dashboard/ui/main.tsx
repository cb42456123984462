// The dashboard's entry: sign-in gate and a two-route router (the sandboxes list and one sandbox) on paths under
// /dashboard/, so that links can be shared and reloaded.
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { storedKey, storeKey } from "./api.js";
import { SandboxPage } from "./sandbox-page.js";
import { SandboxesPage } from "./sandboxes-page.js";
import { SignIn } from "./sign-in.js";
import { BASE, navigate, usePath } from "./router.js";
import "@xterm/xterm/css/xterm.css";
import "./styles.css";

function App() {
  const [key, setKey] = useState(storedKey());
  const path = usePath();
  useEffect(() => {
    const signOut = () => {
      storeKey(null);
      setKey(null);
    };
    window.addEventListener("burrow:signed-out", signOut);
    return () => window.removeEventListener("burrow:signed-out", signOut);
  }, []);
  if (!key) {
    return <SignIn onSignedIn={(k) => (storeKey(k), setKey(k))} />;
  }
  const sandbox = /^sandboxes\/([^/]+)$/.exec(path.slice(BASE.length));
  return (
    <div class="app">
      <header>
        <a href={BASE} onClick={(e) => (e.preventDefault(), navigate(BASE))} class="brand">
          Burrow
        </a>
        <nav>
          <a href={BASE} onClick={(e) => (e.preventDefault(), navigate(BASE))}>Sandboxes</a>
        </nav>
        <button class="sign-out" onClick={() => window.dispatchEvent(new CustomEvent("burrow:signed-out"))}>
          Sign out
        </button>
      </header>
      <main>{sandbox ? <SandboxPage id={decodeURIComponent(sandbox[1]!)} /> : <SandboxesPage />}</main>
    </div>
  );
}

render(<App />, document.getElementById("app")!);
