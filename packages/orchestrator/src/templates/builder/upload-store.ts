// Uploaded COPY contexts, kept in the state directory as `<root>/<templateId>/<filesHash>` until collected.
//
// The SDK uploads a build context to the URL the files check returns, once per template and files hash. So an
// upload belongs to one template (another template's client cannot plant the context this one's build will
// use), is written once (never replaced: a second write of the same hash is refused), and is bounded in size,
// number and total bytes. Uploads no running build uses are collected once they are older than a day: a client
// whose upload was collected simply uploads again (the files check answers "not present").
import { createReadStream, createWriteStream } from "node:fs";
import { link, lstat, mkdir, readdir, rm, rmdir, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import { Transform, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createHash, randomBytes } from "node:crypto";
import { Code } from "@burrow/protocol";
import type { UploadLimits } from "../../config.js";
import { TemplateBuildError } from "./template-build-error.js";

const HASH = /^[a-f0-9]{64}$/;
/** Template ids are `randomId()`s; anything else never names a directory here. */
const TEMPLATE_ID = /^[a-z0-9]{1,64}$/;
/** Uploads being written, one file each; what a killed server left here is removed by the next collection. */
const PARTIAL_DIR = ".partial";

export interface WriteUploadOptions {
  /** The request's Content-Length, when it has one: reserved up front against the totals. */
  contentLength?: number | undefined;
  signal?: AbortSignal | undefined;
}

export class UploadStore {
  /** Bytes reserved by uploads in progress, by partial file name. */
  private readonly inProgress = new Map<string, number>();
  /** Admission (usage scan + reservation) runs one at a time so concurrent uploads cannot overshoot the caps. */
  private admission: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly root: string,
    private readonly limits: Readonly<UploadLimits>,
  ) {}

  get maxBytes(): number {
    return this.limits.maxBytes;
  }

  path(templateId: string, hash: string): string {
    checkIds(templateId, hash);
    return join(this.root, templateId, hash);
  }

  async has(templateId: string, hash: string): Promise<boolean> {
    return lstat(this.path(templateId, hash)).then(
      (st) => st.isFile(),
      () => false,
    );
  }

  /**
   * Store `body` as the upload of `hash` for `templateId`. When that upload is present (or completes first), the
   * same bytes again are accepted as a no-op — two builds of one template may upload the same files at once —
   * and other bytes are refused with already_exists: an upload is never replaced. resource_exhausted when it is
   * too large or the store is full.
   */
  async write(templateId: string, hash: string, body: Readable, opts: WriteUploadOptions = {}): Promise<void> {
    const final = this.path(templateId, hash);
    if (opts.contentLength !== undefined && opts.contentLength > this.limits.maxBytes) throw this.tooLarge();
    const partName = `${templateId}-${hash}-${randomBytes(6).toString("hex")}`;
    const part = join(this.root, PARTIAL_DIR, partName);
    await this.reserve(partName, opts.contentLength ?? this.limits.maxBytes);
    try {
      await mkdir(join(this.root, PARTIAL_DIR), { recursive: true });
      await mkdir(join(this.root, templateId), { recursive: true });
      let received = 0;
      const limit = new Transform({
        transform: (chunk: Buffer, _encoding, done) => {
          received += chunk.length;
          done(received > this.limits.maxBytes ? this.tooLarge() : null, chunk);
        },
      });
      await pipeline(body, limit, createWriteStream(part, { flags: "wx", mode: 0o600 }), { signal: opts.signal });
      try {
        // link() never replaces: of two uploads of one hash, the second finds the first's file and fails.
        await link(part, final);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
        if ((await sha256File(part)) !== (await sha256File(final))) throw alreadyPresent(hash);
      }
    } finally {
      this.inProgress.delete(partName);
      await unlink(part).catch(() => undefined);
    }
  }

  async remove(templateId: string, hash: string): Promise<void> {
    await rm(this.path(templateId, hash), { force: true });
    await rmdir(join(this.root, templateId)).catch(() => undefined);
  }

  /**
   * Remove uploads older than maxAgeMs that are not in `inUse` (`<templateId>/<hash>`), partial files of
   * uploads no longer in progress, and anything else that does not belong here. Returns how many uploads went.
   */
  async collect(inUse: ReadonlySet<string>, now = Date.now()): Promise<number> {
    let removed = 0;
    for (const name of await readdir(this.root).catch(() => [] as string[])) {
      const path = join(this.root, name);
      if (name === PARTIAL_DIR) {
        for (const part of await readdir(path).catch(() => [] as string[])) {
          if (!this.inProgress.has(part)) await rm(join(path, part), { force: true });
        }
        continue;
      }
      const st = await lstat(path).catch(() => undefined);
      if (!st) continue;
      if (!st.isDirectory() || !TEMPLATE_ID.test(name)) {
        // Earlier versions kept uploads directly here, by hash.
        await rm(path, { recursive: true, force: true });
        continue;
      }
      for (const hash of await readdir(path).catch(() => [] as string[])) {
        const file = join(path, hash);
        const fst = await lstat(file).catch(() => undefined);
        if (!fst) continue;
        if (fst.isFile() && HASH.test(hash) && (inUse.has(`${name}/${hash}`) || now - fst.mtimeMs < this.limits.maxAgeMs)) continue;
        await rm(file, { recursive: true, force: true });
        removed++;
      }
      await rmdir(path).catch(() => undefined);
    }
    return removed;
  }

  /** Reserve `bytes` for an upload, or refuse when the store would hold too many uploads or bytes. */
  private async reserve(partName: string, bytes: number): Promise<void> {
    const admit = this.admission.then(async () => {
      const usage = await this.usage();
      if (usage.count + 1 > this.limits.maxCount || usage.bytes + bytes > this.limits.maxTotalBytes) {
        throw new TemplateBuildError(
          Code.ResourceExhausted,
          `the server holds as many uploaded build contexts as it may (${usage.count} uploads, ${usage.bytes} bytes); ` +
            "try again once builds have finished and old uploads are collected",
        );
      }
      this.inProgress.set(partName, bytes);
    });
    this.admission = admit.catch(() => undefined);
    await admit;
  }

  /** Uploads on disk plus reservations of those in progress. */
  private async usage(): Promise<{ count: number; bytes: number }> {
    let count = this.inProgress.size;
    let bytes = 0;
    for (const reserved of this.inProgress.values()) bytes += reserved;
    for (const name of await readdir(this.root).catch(() => [] as string[])) {
      if (name === PARTIAL_DIR) continue;
      for (const hash of await readdir(join(this.root, name)).catch(() => [] as string[])) {
        const st = await stat(join(this.root, name, hash)).catch(() => undefined);
        if (!st?.isFile()) continue;
        count++;
        bytes += st.size;
      }
    }
    return { count, bytes };
  }

  private tooLarge(): TemplateBuildError {
    return new TemplateBuildError(Code.ResourceExhausted, `upload is larger than the server's limit of ${this.limits.maxBytes} bytes`);
  }
}

async function sha256File(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

export function checkIds(templateId: string, hash: string): void {
  if (!HASH.test(hash)) throw new TemplateBuildError(Code.InvalidArgument, "files hash must be sha256 hex");
  if (!TEMPLATE_ID.test(templateId)) throw new TemplateBuildError(Code.InvalidArgument, `'${templateId.slice(0, 64)}' is not a template id`);
}

function alreadyPresent(hash: string): TemplateBuildError {
  return new TemplateBuildError(
    Code.AlreadyExists,
    `the files ${hash.slice(0, 12)}… of this template are already uploaded; an upload is written once and never replaced`,
  );
}
