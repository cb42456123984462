// Uploaded build contexts cannot be replaced, planted or oversized. The SDK's flow: the files check answers
// {present, url}; the client PUTs the tar to the url. An upload belongs to one template, is written once, gets
// no upload URL once present, is checked against its files hash when the build uses it, and is capped in size.
import { request } from "node:http";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Sandbox, Template } from "e2b";
import { afterAll, describe, expect, inject, it } from "vitest";
import { api, deleteTemplates, filesCheck, put, rawTar, requestBuild, sdkFilesHash, startAndWait, type TarEntry } from "./template-rest.js";

const env = inject("burrow");
const conn = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl };
const suffix = Math.random().toString(36).slice(2, 8);
const created = new Set<string>();
const ctx = mkdtempSync("/var/tmp/burrow-upload-ctx-");

afterAll(async () => {
  await deleteTemplates(env, created);
  rmSync(ctx, { recursive: true, force: true });
});

function name(label: string): string {
  const n = `upload-${label}-${suffix}`;
  created.add(n);
  return n;
}

const good: TarEntry[] = [{ path: "app.txt", body: `genuine ${suffix}\n` }];
const evil: TarEntry[] = [{ path: "app.txt", body: `replaced ${suffix}\n` }];
const hash = sdkFilesHash("app.txt", "/home/user/", good);
const copySpec = (h: string) => ({ fromTemplate: "base", steps: [{ type: "COPY", args: ["app.txt", "/home/user/", "", ""], force: false, filesHash: h }] });

async function readInSandbox(template: string, path: string): Promise<string> {
  const sandbox = await Sandbox.create(template, conn);
  try {
    return (await sandbox.commands.run(`cat ${path}`)).stdout;
  } finally {
    await sandbox.kill();
  }
}

describe("uploads", () => {
  it("are written once: a second PUT is refused in E2B's shape, and a present hash gets no upload URL", { timeout: 300_000 }, async () => {
    const tpl = name("once");
    const ids = await requestBuild(env, tpl);
    const first = await filesCheck(env, ids.templateID, hash);
    expect(first).toMatchObject({ status: 201, json: { present: false, url: expect.stringContaining(ids.templateID) } });
    // Upload URLs issued while absent: the first PUT wins, other bytes are refused, the same bytes are a no-op.
    const second = await filesCheck(env, ids.templateID, hash);
    const third = await filesCheck(env, ids.templateID, hash);
    expect(await put(first.json.url, rawTar(good))).toEqual({ status: 200, json: undefined });
    const replaced = await put(second.json.url, rawTar(evil));
    expect(replaced).toEqual({ status: 409, json: { code: 409, message: expect.stringMatching(/already uploaded.*never replaced/) } });
    expect(await put(third.json.url, rawTar(good))).toEqual({ status: 200, json: undefined });
    const again = await put(first.json.url, rawTar(evil));
    expect(again).toEqual({ status: 409, json: { code: 409, message: expect.stringMatching(/already uploaded/) } });
    // Present: no URL, no token.
    expect(await filesCheck(env, ids.templateID, hash)).toEqual({ status: 201, json: { present: true } });
    // The upload lives in the state directory, under its template.
    expect(existsSync(join(env.stateDir, "builds/uploads", ids.templateID, hash))).toBe(true);

    const result = await startAndWait(env, ids, copySpec(hash));
    expect(result.status, JSON.stringify(result.reason)).toBe("ready");
    expect(await readInSandbox(tpl, "/home/user/app.txt")).toBe(`genuine ${suffix}\n`);
  });

  it("refuse concurrent PUTs of one hash but one", { timeout: 120_000 }, async () => {
    const ids = await requestBuild(env, name("race"));
    const urls = await Promise.all([1, 2, 3].map(async () => (await filesCheck(env, ids.templateID, hash)).json.url as string));
    const statuses = (await Promise.all(urls.map((url, i) => put(url, rawTar(i === 0 ? good : evil))))).map((r) => r.status).sort();
    expect(statuses).toEqual([200, 409, 409]);
  });

  it("belong to their template: another template's upload of the same hash is not used", { timeout: 120_000 }, async () => {
    const planter = await requestBuild(env, name("planter"));
    const planted = await filesCheck(env, planter.templateID, hash);
    expect((await put(planted.json.url, rawTar(evil))).status).toBe(200);
    const victim = await requestBuild(env, name("victim"));
    expect(await filesCheck(env, victim.templateID, hash)).toMatchObject({ json: { present: false } });
    // A token is for one template and one hash.
    const elsewhere = (planted.json.url as string).replace(planter.templateID, victim.templateID);
    expect((await put(elsewhere, rawTar(evil))).status).toBe(403);
  });

  it("that do not match their files hash fail the build clearly and are discarded", { timeout: 300_000 }, async () => {
    const tpl = name("mismatch");
    const ids = await requestBuild(env, tpl);
    const check = await filesCheck(env, ids.templateID, hash);
    expect((await put(check.json.url, rawTar(evil))).status).toBe(200);
    const result = await startAndWait(env, ids, copySpec(hash));
    expect(result.status).toBe("error");
    expect(result.reason?.message).toBe(
      `step 1: the uploaded files of COPY 'app.txt' do not match their files hash ${hash.slice(0, 12)}…; the upload was discarded, build again to upload the files anew`,
    );
    expect(await filesCheck(env, ids.templateID, hash)).toMatchObject({ json: { present: false } });
  });

  it("still work for the SDK: a rebuild finds its files present and skips the upload", { timeout: 300_000 }, async () => {
    writeFileSync(join(ctx, "app.txt"), `sdk ${suffix}\n`);
    const tpl = name("sdk");
    const template = Template({ fileContextPath: ctx }).fromTemplate("base").copy("app.txt", "/home/user/");
    const first: string[] = [];
    await Template.build(template, tpl, { ...conn, onBuildLogs: (e) => first.push(e.message) });
    expect(first).toContain("Uploaded 'app.txt'");
    const second: string[] = [];
    await Template.build(template, tpl, { ...conn, onBuildLogs: (e) => second.push(e.message) });
    expect(second).toContain("Skipping upload of 'app.txt', already cached");
    expect(second.some((l) => /^CACHED \[1\/1\] COPY app\.txt/.test(l))).toBe(true);
    expect(await readInSandbox(tpl, "/home/user/app.txt")).toBe(`sdk ${suffix}\n`);
  });

  it("larger than the limit are refused with 413 before being read; unknown templates with 404", { timeout: 60_000 }, async () => {
    const ids = await requestBuild(env, name("big"));
    const check = await filesCheck(env, ids.templateID, hash);
    const url = new URL(check.json.url as string);
    const reply = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(url, { method: "PUT", headers: { "content-length": String(2 ** 30 + 1) } }, (res) => {
        let body = "";
        res.on("data", (c: Buffer) => (body += c.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on("error", reject);
      // A few bytes of the promised gigabyte: the answer must come without the rest.
      req.write(Buffer.alloc(1024));
    });
    expect(reply.status).toBe(413);
    expect(JSON.parse(reply.body)).toEqual({ code: 413, message: `upload is larger than the server's limit of ${2 ** 30} bytes` });
    // The token was not spent by the refused upload, and nothing was stored.
    expect(await filesCheck(env, ids.templateID, hash)).toMatchObject({ json: { present: false } });
    const unknown = await api(env, "GET", `/templates/nosuchtemplate${suffix}/files/${hash}`);
    expect(unknown).toEqual({ status: 404, json: { code: 404, message: expect.stringMatching(/not found/) } });
  });
});
