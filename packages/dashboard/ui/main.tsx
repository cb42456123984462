// The dashboard's entry: sign-in gate, the header's navigation and the routes under /dashboard/ (sandboxes, one
// sandbox, templates, one template, server, bus, triggers), so that links can be shared and reloaded.
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { storedKey, storeKey } from "./api.js";
import { BusPage } from "./bus-page.js";
import { Link } from "./link.js";
import { SandboxPage } from "./sandbox-page.js";
import { SandboxesPage } from "./sandboxes-page.js";
import { ServerPage } from "./server-page.js";
import { SignIn } from "./sign-in.js";
import { TemplatePage } from "./template-page.js";
import { TemplatesPage } from "./templates-page.js";
import { TriggersPage } from "./triggers-page.js";
import { BASE, usePath } from "./router.js";
import "@xterm/xterm/css/xterm.css";
import "./styles.css";

const SECTIONS = [
  { path: "", label: "Sandboxes", matches: (r: string) => r === "" || r.startsWith("sandboxes/") },
  { path: "templates", label: "Templates", matches: (r: string) => r === "templates" || r.startsWith("templates/") },
  { path: "server", label: "Server", matches: (r: string) => r === "server" },
  { path: "bus", label: "Bus", matches: (r: string) => r === "bus" },
  { path: "triggers", label: "Triggers", matches: (r: string) => r === "triggers" },
];

function Page({ route }: { route: string }) {
  const sandbox = /^sandboxes\/([^/]+)$/.exec(route);
  if (sandbox) return <SandboxPage id={decodeURIComponent(sandbox[1]!)} />;
  const template = /^templates\/([^/]+)$/.exec(route);
  if (template) return <TemplatePage templateRef={decodeURIComponent(template[1]!)} />;
  if (route === "templates") return <TemplatesPage />;
  if (route === "server") return <ServerPage />;
  if (route === "bus") return <BusPage />;
  if (route === "triggers") return <TriggersPage />;
  return <SandboxesPage />;
}

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
  const route = path.slice(BASE.length).replace(/\/$/, "");
  return (
    <div class="app">
      <header>
        <Link href={BASE} class="brand">Burrow</Link>
        <nav>
          {SECTIONS.map((s) => (
            <Link key={s.path} href={`${BASE}${s.path}`} class={s.matches(route) ? "active" : ""}>
              {s.label}
            </Link>
          ))}
        </nav>
        <button class="sign-out" onClick={() => window.dispatchEvent(new CustomEvent("burrow:signed-out"))}>
          Sign out
        </button>
      </header>
      <main>
        <Page key={route} route={route} />
      </main>
    </div>
  );
}

render(<App />, document.getElementById("app")!);
