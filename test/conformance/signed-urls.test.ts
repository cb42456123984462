// Signed upload/download URLs fetched without any SDK headers (SDK tests sandbox/secure, sandbox/files/signing):
// the server routes them by recomputing the signature, envd validates them.
import { describe, expect } from "vitest";
import { sandboxTest } from "./env.js";

describe("signed URLs", () => {
  sandboxTest("download and upload without headers", async ({ sandbox }) => {
    await sandbox.files.write("/home/user/signed.txt", "secret");
    const download = await sandbox.downloadUrl("/home/user/signed.txt");
    const res = await fetch(download);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("secret");

    const upload = await sandbox.uploadUrl("/home/user/uploaded.txt");
    const form = new FormData();
    form.append("file", new Blob(["up"]), "uploaded.txt");
    const up = await fetch(upload, { method: "POST", body: form });
    expect(up.status).toBe(200);
    expect(await sandbox.files.read("/home/user/uploaded.txt")).toBe("up");
  });

  sandboxTest("signature with expiration, and as another user", async ({ sandbox }) => {
    await sandbox.files.write("/tmp/root-file", "r", { user: "root" });
    const url = await sandbox.downloadUrl("/tmp/root-file", { user: "root", useSignatureExpiration: 60_000 });
    expect(await (await fetch(url)).text()).toBe("r");
  });

  sandboxTest("an expired signature gets envd's exact 401", async ({ sandbox }) => {
    await sandbox.files.write("/home/user/old.txt", "old");
    const url = await sandbox.downloadUrl("/home/user/old.txt", { useSignatureExpiration: -120_000 });
    const res = await fetch(url);
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ code: 401, message: "signature is already expired" });
  });

  sandboxTest("a tampered signature is refused", async ({ sandbox }) => {
    const url = new URL(await sandbox.downloadUrl("/home/user/x.txt"));
    url.searchParams.set("path", "/etc/shadow");
    const res = await fetch(url);
    expect([401, 502]).toContain(res.status);
  });

  sandboxTest("URLs of a killed sandbox answer 502", async ({ sandbox }) => {
    const url = await sandbox.downloadUrl("/home/user/x.txt");
    await sandbox.kill();
    expect((await fetch(url)).status).toBe(502);
  });
});
