// Signed URLs in every combination (SDK tests sandbox/files/signing, sandbox/secure): upload and download, with
// and without expiry, default user and root, fetched by a third party with no headers at all.
import { describe, expect } from "vitest";
import { sandboxTest } from "./env.js";

const EXPIRED = { code: 401, message: "signature is already expired" };

async function upload(url: string, body: string): Promise<Response> {
  const form = new FormData();
  form.append("file", new Blob([body]), "ignored-name.txt");
  return fetch(url, { method: "POST", body: form });
}

describe("signed URLs", () => {
  sandboxTest("downloadUrl without expiry: plain fetch, no headers, exact bytes and a clean URL", async ({ sandbox }) => {
    await sandbox.files.write("/home/user/dl.txt", "download me");
    const url = new URL(await sandbox.downloadUrl("/home/user/dl.txt"));
    expect(url.searchParams.get("signature")).toMatch(/^v1_/);
    expect(url.searchParams.has("signature_expiration")).toBe(false);
    expect(url.searchParams.has("username")).toBe(false);
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("download me");
  });

  sandboxTest("downloadUrl with expiry works until it expires", async ({ sandbox }) => {
    await sandbox.files.write("/home/user/dl2.txt", "soon gone");
    const url = new URL(await sandbox.downloadUrl("/home/user/dl2.txt", { useSignatureExpiration: 30_000 }));
    expect(Number(url.searchParams.get("signature_expiration"))).toBeGreaterThan(Date.now() / 1000);
    expect(await (await fetch(url)).text()).toBe("soon gone");

    const expired = await sandbox.downloadUrl("/home/user/dl2.txt", { useSignatureExpiration: -1_000 });
    const res = await fetch(expired);
    expect(res.status).toBe(401);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await res.json()).toEqual(EXPIRED);
  });

  sandboxTest("uploadUrl without expiry: the file lands at the signed path, owned by the user", async ({ sandbox }) => {
    const url = await sandbox.uploadUrl("/home/user/up/one.txt");
    const res = await upload(url, "uploaded");
    expect(res.status).toBe(200);
    const entries = (await res.json()) as { path: string }[];
    expect(entries.map((e) => e.path)).toEqual(["/home/user/up/one.txt"]);
    expect((await sandbox.commands.run("cat up/one.txt; stat -c ' %U' up/one.txt")).stdout).toBe("uploaded user\n");
  });

  sandboxTest("uploadUrl with expiry works; an expired one gets the exact 401 and writes nothing", async ({ sandbox }) => {
    const fresh = await sandbox.uploadUrl("/home/user/up2.txt", { useSignatureExpiration: 30_000 });
    expect((await upload(fresh, "fresh")).status).toBe(200);
    expect(await sandbox.files.read("/home/user/up2.txt")).toBe("fresh");

    const stale = await sandbox.uploadUrl("/home/user/up3.txt", { useSignatureExpiration: -60_000 });
    const res = await upload(stale, "stale");
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual(EXPIRED);
    expect(await sandbox.files.exists("/home/user/up3.txt")).toBe(false);
  });

  sandboxTest("root-signed URLs read and write as root", async ({ sandbox }) => {
    const up = await sandbox.uploadUrl("/root/by-root.txt", { user: "root" });
    expect((await upload(up, "rooted")).status).toBe(200);
    expect((await sandbox.commands.run("stat -c %U /root/by-root.txt", { user: "root" })).stdout).toBe("root\n");
    const down = await sandbox.downloadUrl("/root/by-root.txt", { user: "root", useSignatureExpiration: 30_000 });
    expect(await (await fetch(down)).text()).toBe("rooted");
  });

  sandboxTest("a URL signed for reading cannot write, one for a path cannot serve another", async ({ sandbox }) => {
    await sandbox.files.write("/home/user/ro.txt", "original");
    const readUrl = await sandbox.downloadUrl("/home/user/ro.txt");
    const asUpload = await upload(readUrl, "overwritten");
    expect([401, 502]).toContain(asUpload.status);
    expect(await sandbox.files.read("/home/user/ro.txt")).toBe("original");

    const url = new URL(readUrl);
    url.searchParams.set("username", "root");
    expect([401, 502]).toContain((await fetch(url)).status);
  });

  sandboxTest("an upload URL without a path uses the multipart filename", async ({ sandbox }) => {
    const url = await sandbox.uploadUrl();
    const form = new FormData();
    form.append("file", new Blob(["by filename"]), "/home/user/from-filename.txt");
    const res = await fetch(url, { method: "POST", body: form });
    expect(res.status).toBe(200);
    expect(await sandbox.files.read("/home/user/from-filename.txt")).toBe("by filename");
  });
});
