import { createReadStream, createWriteStream } from "node:fs";
import { chown, rename, rm, stat } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { basename, dirname } from "node:path";
import { BurrowError, Code, errnoOf } from "@burrow/protocol/errors";
import type { EnvdContext } from "../context.js";
import { mkdirAllOwned } from "../filesystem/owned-mkdir.js";
import { resolveRequestUser } from "../users/request-user.js";
import { readJsonBody } from "./body.js";
import { resolveFilePath } from "./file-request.js";
import { sendJson } from "./respond.js";

/** POST /files/compose: concatenates `source_paths` into `destination` (token-protected like other routes). */
export async function postCompose(env: EnvdContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = (await readJsonBody(req, 1024 * 1024)) as { source_paths?: unknown; destination?: unknown; username?: unknown };
  if (!Array.isArray(body.source_paths) || body.source_paths.length === 0 || !body.source_paths.every((p) => typeof p === "string")) {
    throw new BurrowError(Code.InvalidArgument, "source_paths must be a non-empty array of strings");
  }
  if (typeof body.destination !== "string" || !body.destination) throw new BurrowError(Code.InvalidArgument, "destination is required");
  // An unknown user is Unauthenticated (401), as E2B answers it.
  const user = resolveRequestUser(env.users, env.state, typeof body.username === "string" ? body.username : undefined);
  const sources = (body.source_paths as string[]).map((p) => resolveFilePath(env, user, p));
  const destination = resolveFilePath(env, user, body.destination);
  for (const s of sources) {
    const st = await stat(s).catch(() => undefined);
    if (!st) throw new BurrowError(Code.NotFound, `path '${s}' does not exist`);
    if (!st.isFile()) throw new BurrowError(Code.InvalidArgument, `path '${s}' is not a regular file`);
  }
  await mkdirAllOwned(dirname(destination), user);
  const tmp = `${destination}.compose-${process.pid}-${Date.now()}`;
  try {
    const out = createWriteStream(tmp, { mode: 0o644 });
    for (const s of sources) {
      for await (const chunk of createReadStream(s)) {
        if (!out.write(chunk)) await new Promise<void>((r) => out.once("drain", () => r()));
      }
    }
    await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
    await chown(tmp, user.uid, user.gid);
    await rename(tmp, destination);
  } catch (err) {
    await rm(tmp, { force: true });
    const code = errnoOf(err);
    if (code === "ENOSPC" || code === "EDQUOT") throw new BurrowError(Code.ResourceExhausted, "not enough disk space", { reason: "disk_full" });
    throw err;
  }
  sendJson(res, 200, { path: destination, name: basename(destination), type: "file" });
}
