// POST /init validates every field before it applies any: a request with one bad field is a 400 that names it
// and changes nothing (env vars, token, default user and workdir stay as they were).
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { initEnvd, setupEnvd } from "./helpers/envd-fixture.js";

let env: Awaited<ReturnType<typeof setupEnvd>>;
let url: string;

beforeAll(async () => {
  env = await setupEnvd();
  url = env.envd.url;
});
afterAll(async () => {
  await env?.cleanup();
});

const auth = () => ({ "X-Access-Token": env.token });
const envs = async (token = env.token) => (await fetch(`${url}/envs`, { headers: { "X-Access-Token": token } })).json();
/** Who and where a command runs by default: the defaults /init sets. */
const defaults = async () => (await env.sandbox.commands.run("echo $(id -un) $(pwd)")).stdout.trim();

describe("/init is all or nothing", () => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ["unknown defaultUser", { defaultUser: "no-such-user-here" }, /defaultUser 'no-such-user-here' does not exist/],
    ["defaultUser not a string", { defaultUser: 42 }, /defaultUser must be a string/],
    ["envVars not an object", { envVars: ["A=1"] }, /envVars must be an object/],
    ["env var value not a string", { envVars: { GOOD: "1", BAD: 2 } }, /envVars\.BAD must be a string/],
    ["env var name with =", { envVars: { "A=B": "1" } }, /invalid env var name 'A=B'/],
    ["env var value with NUL", { envVars: { A: "x\u0000y" } }, /env var 'A' must not contain NUL/],
    ["accessToken not a string", { accessToken: 7 }, /accessToken must be a string/],
    ["accessToken with a newline", { accessToken: "a\r\nb" }, /accessToken must not contain control characters/],
    ["relative defaultWorkdir", { defaultWorkdir: "relative/dir" }, /defaultWorkdir must be an absolute path/],
  ];

  test.each(cases)("%s: 400 with a clear message, nothing applied", async (_name, bad, message) => {
    const before = { envs: await envs(), defaults: await defaults() };
    // Every other field is valid and would change something if applied.
    const body = { envVars: { APPLIED: "yes" }, accessToken: "replaced-token", defaultUser: "root", defaultWorkdir: "/", ...bad };
    const res = await initEnvd(url, body, auth());
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ code: 400, message: expect.stringMatching(message) });
    // The old token still works (a new one would have locked it out) and nothing else moved.
    expect(await envs()).toEqual(before.envs);
    expect(await defaults()).toBe(before.defaults);
    expect((await fetch(`${url}/envs`, { headers: { "X-Access-Token": "replaced-token" } })).status).toBe(401);
  });

  test("a valid request applies every field", async () => {
    const res = await initEnvd(url, { envVars: { APPLIED: "yes" }, defaultUser: "root", defaultWorkdir: "/tmp" }, auth());
    expect(res.status).toBe(204);
    expect(await envs()).toMatchObject({ APPLIED: "yes" });
    expect(await defaults()).toBe("root /tmp");
    // back to the fixture's user for the other tests in this file
    const back = await initEnvd(url, { defaultUser: env.user.name, defaultWorkdir: "" }, auth());
    expect(back.status).toBe(204);
    expect(await defaults()).toBe(`${env.user.name} ${env.user.home}`);
  });
});
