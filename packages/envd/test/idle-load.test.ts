// What envd loads while it is idle, before a sandbox's first command: Node 20 defines fetch's `Headers` lazily, and
// Connect's Node adapter makes one for every request, so unless the routes load it, the first command of every
// sandbox loads Node's whole fetch implementation (undici, about 20 ms of CPU). Checked in a fresh Node process:
// vitest's own has loaded it long ago.
import { execFileSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";

const dist = join(dirname(fileURLToPath(import.meta.url)), "..", "dist");

const PROBE = `
const lazy = () => typeof Object.getOwnPropertyDescriptor(globalThis, "Headers")?.get === "function";
const before = lazy();
const { createEnvdRoutes } = await import(${JSON.stringify(join(dist, "routes.js"))});
const { EnvdState } = await import(${JSON.stringify(join(dist, "state.js"))});
const { UserDb } = await import(${JSON.stringify(join(dist, "users", "user-db.js"))});
const { ProcessTable } = await import(${JSON.stringify(join(dist, "process", "process-table.js"))});
const log = { info() {}, warn() {}, error() {} };
const routes = createEnvdRoutes({ state: new EnvdState(), users: new UserDb(), processes: new ProcessTable(), log });
routes.close();
console.log(JSON.stringify({ before, after: lazy() }));
`;

test("loading the routes loads fetch's Headers, which every Connect request needs", () => {
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", PROBE], { encoding: "utf8", timeout: 30_000 });
  // Still lazy in a fresh process before the routes load (else this test proves nothing), loaded after.
  expect(JSON.parse(out)).toEqual({ before: true, after: false });
});
