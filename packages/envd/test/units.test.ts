// Pure functions whose exact output is part of the wire contract.
import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { describe, expect, test } from "vitest";
import { checkFileAccess } from "../src/auth/access.js";
import { fileSignature } from "../src/auth/signature.js";
import { goFileModeString } from "../src/filesystem/file-mode.js";
import { parseRange } from "../src/http/range.js";
import { readMultipart } from "../src/http/multipart.js";
import { exitInfo } from "../src/process/exit-status.js";

describe("wire formats", () => {
  test("Go FileMode strings", () => {
    expect(goFileModeString(0o100644)).toBe("-rw-r--r--");
    expect(goFileModeString(0o040755)).toBe("drwxr-xr-x");
    expect(goFileModeString(0o120777)).toBe("Lrwxrwxrwx");
    expect(goFileModeString(0o041777)).toBe("dtrwxrwxrwx");
    expect(goFileModeString(0o104755)).toBe("urwxr-xr-x");
    expect(goFileModeString(0o020666)).toBe("Dcrw-rw-rw-");
    expect(goFileModeString(0o010600)).toBe("prw-------");
  });

  test("Go ProcessState strings", () => {
    expect(exitInfo(0, null)).toEqual({ exitCode: 0, exited: true, status: "exit status 0" });
    expect(exitInfo(2, null)).toEqual({ exitCode: 2, exited: true, status: "exit status 2", error: "exit status 2" });
    expect(exitInfo(null, "SIGKILL")).toMatchObject({ exitCode: -1, exited: false, status: "signal: killed" });
    expect(exitInfo(null, 11).status).toBe("signal: segmentation fault");
  });

  test("v1 signature matches the SDK's formula", () => {
    // sha256("/a:read::tok") in std base64 without padding, computed independently of fileSignature
    const expected = "v1_" + createHash("sha256").update("/a:read::tok").digest("base64").replace(/=+$/, "");
    expect(fileSignature("/a", "read", "", "tok")).toBe(expected);
    expect(fileSignature("/a", "read", "", "tok", 5)).not.toBe(expected);
    const base = { token: "tok", header: undefined, path: "/a", username: "", operation: "read" as const, nowSeconds: 100 };
    expect(() => checkFileAccess({ ...base, signature: fileSignature("/a", "read", "", "tok", 99), signatureExpiration: "99" }))
      .toThrow("signature is already expired");
    expect(() => checkFileAccess({ ...base, signature: fileSignature("/a", "read", "", "tok", 100), signatureExpiration: "100" }))
      .not.toThrow();
  });

  test("Range parsing", () => {
    expect(parseRange("bytes=0-0", 10)).toEqual({ kind: "partial", start: 0, end: 0 });
    expect(parseRange("bytes=-3", 10)).toEqual({ kind: "partial", start: 7, end: 9 });
    expect(parseRange("bytes=5-", 10)).toEqual({ kind: "partial", start: 5, end: 9 });
    expect(parseRange("bytes=10-", 10)).toEqual({ kind: "unsatisfiable" });
    expect(parseRange(undefined, 10)).toEqual({ kind: "full" });
  });

  test("multipart reader handles boundaries split across chunks", async () => {
    const body = '--b0\r\nContent-Disposition: form-data; name="file"; filename="/x/a.txt"\r\n\r\nAAA\r\n--b0\r\n'
      + 'Content-Disposition: form-data; name="file"; filename="b.txt"\r\n\r\n\r\n--b0--\r\n';
    const chunks = [...body].map((c) => Buffer.from(c)); // one byte at a time
    const parts: [string | undefined, string][] = [];
    for await (const p of readMultipart(Readable.from(chunks), "b0")) {
      const data: Buffer[] = [];
      for await (const c of p.body) data.push(c);
      parts.push([p.filename, Buffer.concat(data).toString()]);
    }
    expect(parts).toEqual([["/x/a.txt", "AAA"], ["b.txt", ""]]);
  });
});
