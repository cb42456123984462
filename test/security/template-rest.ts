// The template build API spoken directly, the way a hostile client would: archives written header by header,
// files hashes computed with the SDK's public formula for whatever the archive holds, uploads and builds over
// plain REST. Used by the build-context, image and fuzz suites.
import { createHash } from "node:crypto";
import * as tar from "tar";

export interface Conn {
  apiUrl: string;
  apiKey: string;
}

export interface TarEntry {
  path: string;
  type?: "File" | "Directory" | "SymbolicLink" | "Link";
  linkpath?: string;
  body?: string | Buffer;
  mode?: number;
}

/** A tar archive, one header per entry (node-tar's Header), so it can say things real files cannot. */
export function rawTar(entries: TarEntry[]): Buffer {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    const type = e.type ?? "File";
    const body = type === "File" ? Buffer.from(e.body ?? "") : Buffer.alloc(0);
    const header = new tar.Header({
      path: e.path,
      type,
      linkpath: e.linkpath,
      size: body.length,
      mode: e.mode ?? (type === "Directory" ? 0o755 : type === "SymbolicLink" ? 0o777 : 0o644),
      mtime: new Date(0),
      uid: 0,
      gid: 0,
    });
    // Long paths need a PAX header first; node-tar's Pax writes it.
    if (header.encode()) {
      const pax = new tar.Pax({ path: e.path, linkpath: e.linkpath }).encode();
      blocks.push(pax);
    }
    blocks.push(header.block as Buffer);
    if (body.length > 0) blocks.push(body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

/**
 * The files hash the official SDK would send for `COPY src dest` if these entries were the matched files, in
 * archive order (e2b's calculateFilesHash: path, stat mode, size, content or link target; a directory's size
 * is its filesystem's, 4096 on ext4).
 */
export function sdkFilesHash(src: string, dest: string, entries: TarEntry[]): string {
  const hash = createHash("sha256").update(`COPY ${src} ${dest}`);
  const byPath = new Map(entries.map((e) => [e.path.replace(/\/$/, ""), e]));
  for (const e of entries) {
    const type = e.type ?? "File";
    const perm = e.mode ?? (type === "Directory" ? 0o755 : type === "SymbolicLink" ? 0o777 : 0o644);
    const bits = { File: 0o100000, Link: 0o100000, Directory: 0o040000, SymbolicLink: 0o120000 }[type];
    const content = type === "Link" ? Buffer.from(byPath.get(e.linkpath ?? "")?.body ?? "") : Buffer.from(e.body ?? "");
    hash.update(e.path.replace(/\/$/, ""));
    hash.update(String(bits | perm));
    if (type === "Directory") hash.update("4096");
    else if (type === "SymbolicLink") {
      hash.update(String(Buffer.byteLength(e.linkpath ?? "")));
      hash.update(e.linkpath ?? "");
    } else {
      hash.update(String(content.length));
      hash.update(content);
    }
  }
  return hash.digest("hex");
}

export async function api(conn: Conn, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${conn.apiUrl}${path}`, {
    method,
    headers: { "x-api-key": conn.apiKey, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, json: text === "" ? undefined : JSON.parse(text) };
}

export async function requestBuild(conn: Conn, name: string): Promise<{ templateID: string; buildID: string }> {
  const res = await api(conn, "POST", "/v3/templates", { name });
  if (res.status !== 202) throw new Error(`POST /v3/templates: ${res.status} ${JSON.stringify(res.json)}`);
  return res.json as { templateID: string; buildID: string };
}

export async function filesCheck(conn: Conn, templateID: string, hash: string): Promise<{ status: number; json: any }> {
  return api(conn, "GET", `/templates/${templateID}/files/${hash}`);
}

export async function put(url: string, body: Buffer): Promise<{ status: number; json: any }> {
  const res = await fetch(url, { method: "PUT", body });
  const text = await res.text();
  return { status: res.status, json: text === "" ? undefined : JSON.parse(text) };
}

export interface BuildResult {
  status: "ready" | "error" | string;
  reason?: { message: string; step?: string };
  logs: string[];
}

export async function startAndWait(conn: Conn, ids: { templateID: string; buildID: string }, spec: unknown, timeoutMs = 300_000): Promise<BuildResult> {
  const started = await api(conn, "POST", `/v2/templates/${ids.templateID}/builds/${ids.buildID}`, spec);
  if (started.status !== 202) return { status: "refused", reason: started.json, logs: [] };
  const logs: string[] = [];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const page = await api(conn, "GET", `/templates/${ids.templateID}/builds/${ids.buildID}/status?logsOffset=${logs.length}`);
    for (const entry of page.json.logEntries as { message: string }[]) logs.push(entry.message);
    if (page.json.status === "ready" || page.json.status === "error") return { status: page.json.status, reason: page.json.reason, logs };
    if (Date.now() > deadline) throw new Error(`build ${ids.buildID} did not finish: ${logs.slice(-5).join(" | ")}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** One template built from `base` with one COPY of `archive`, the whole way a client would. */
export async function buildWithCopy(
  conn: Conn,
  name: string,
  opts: { archive: Buffer; src: string; dest: string; hash: string; user?: string },
): Promise<BuildResult & { templateID: string; uploadStatus: number }> {
  const ids = await requestBuild(conn, name);
  const check = await filesCheck(conn, ids.templateID, opts.hash);
  let uploadStatus = 0;
  if (check.json.present === false) uploadStatus = (await put(check.json.url as string, opts.archive)).status;
  const result = await startAndWait(conn, ids, {
    fromTemplate: "base",
    steps: [{ type: "COPY", args: [opts.src, opts.dest, opts.user ?? "", ""], force: false, filesHash: opts.hash }],
  });
  return { ...result, templateID: ids.templateID, uploadStatus };
}

export async function deleteTemplates(conn: Conn, refs: Iterable<string>): Promise<void> {
  for (const ref of refs) await api(conn, "DELETE", `/templates/${encodeURIComponent(ref)}`).catch(() => undefined);
}
