// Uploaded COPY contexts as builds use them (stored by upload-store.ts): accepted once per template and files hash
// (a full store is collected before a second try), collected now and then once no waiting or running build names
// them, checked against their files hash before a COPY unpacks them, and digested into the step's cache key.
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import type { Readable } from "node:stream";
import { Code } from "@burrow/protocol";
import type { UploadLimits } from "../../config.js";
import type { Logger } from "../../logger.js";
import type { TemplateStore } from "../template-store.js";
import type { BuildRecord, BuildRegistry } from "./build-registry.js";
import type { BuildStep } from "./build-spec.js";
import { checkFilesHash } from "./files-hash.js";
import { TemplateBuildError } from "./template-build-error.js";
import { UploadStore, type WriteUploadOptions } from "./upload-store.js";

/** How often uploads no build needs any more are looked for (they go once older than uploads.maxAgeMs). */
const UPLOAD_COLLECTION_INTERVAL_MS = 60 * 60 * 1000;

export interface BuildUploadsDeps {
  /** Where uploads are kept. */
  root: string;
  limits: Readonly<UploadLimits>;
  store: TemplateStore;
  registry: BuildRegistry;
  logger: Logger;
}

export class BuildUploads {
  private readonly uploads: UploadStore;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly deps: BuildUploadsDeps) {
    this.uploads = new UploadStore(deps.root, deps.limits);
    // At start (what a previous run left) and then periodically.
    void this.collect();
    this.timer = setInterval(() => void this.collect(), UPLOAD_COLLECTION_INTERVAL_MS);
    this.timer.unref();
  }

  /** Is the COPY context with this files hash already uploaded for this template? */
  async has(templateId: string, hash: string): Promise<boolean> {
    this.requireKnownTemplate(templateId);
    return this.uploads.has(templateId, hash);
  }

  /** Largest upload accepted, in bytes. */
  get maxBytes(): number {
    return this.uploads.maxBytes;
  }

  /** Where the upload lies (for a COPY step that unpacks it). */
  path(templateId: string, hash: string): string {
    return this.uploads.path(templateId, hash);
  }

  /** Store an upload once (already_exists when present); resource_exhausted when too large or too many. */
  async accept(templateId: string, hash: string, body: Readable, opts: WriteUploadOptions = {}): Promise<void> {
    this.requireKnownTemplate(templateId);
    try {
      await this.uploads.write(templateId, hash, body, opts);
    } catch (error) {
      // A full store may only hold uploads old enough to go: collect, then try once more (if the body is unread).
      if (!(error instanceof TemplateBuildError && error.code === Code.ResourceExhausted && body.readableDidRead === false)) throw error;
      if ((await this.collect()) === 0) throw error;
      await this.uploads.write(templateId, hash, body, opts);
    }
  }

  /** Remove uploads no waiting or running build uses once they are old enough; failures are logged. Returns how many went. */
  async collect(): Promise<number> {
    const inUse = new Set<string>();
    for (const record of this.deps.registry.unfinished()) for (const key of record.uploads) inUse.add(key);
    try {
      return await this.uploads.collect(inUse);
    } catch (error) {
      this.deps.logger.warn({ err: error }, "collecting uploaded build contexts failed");
      return 0;
    }
  }

  /**
   * The sha256 of the bytes of a COPY step's upload. It is part of the step's cache key: a layer is reused only
   * for the very bytes it was built from, whatever the client-computed files hash claims.
   */
  async digest(record: BuildRecord, step: BuildStep, stepNo: string): Promise<string> {
    const hash = step.filesHash ?? "";
    if (!(await this.uploads.has(record.templateId, hash))) {
      throw new TemplateBuildError(Code.FailedPrecondition, `step ${stepNo}: the files of this COPY (${hash.slice(0, 12)}…) were not uploaded`, {
        step: stepNo,
      });
    }
    const digest = createHash("sha256");
    for await (const chunk of createReadStream(this.uploads.path(record.templateId, hash))) digest.update(chunk as Buffer);
    return digest.digest("hex");
  }

  /**
   * Check a COPY step's upload against its files hash before anything is unpacked (files-hash.ts). A mismatch
   * or an unreadable archive deletes the upload, so the client's next build uploads its files anew.
   */
  async verify(record: BuildRecord, step: BuildStep, stepNo: string, archive: string): Promise<void> {
    const hash = step.filesHash ?? "";
    const src = step.args[0] ?? "";
    const { verdict, unpackedBytes } = await checkFilesHash(archive, src, step.args[1] ?? "", hash);
    if (verdict === "mismatch" || verdict === "unreadable") {
      await this.uploads.remove(record.templateId, hash);
      const what = verdict === "mismatch" ? `do not match their files hash ${hash.slice(0, 12)}…` : "are not a tar archive the SDK makes";
      throw new TemplateBuildError(
        Code.InvalidArgument,
        `step ${stepNo}: the uploaded files of COPY '${src}' ${what}; the upload was discarded, build again to upload the files anew`,
        { step: stepNo },
      );
    }
    const { maxUnpackedBytes } = this.deps.limits;
    if (unpackedBytes > maxUnpackedBytes) {
      throw new TemplateBuildError(
        Code.ResourceExhausted,
        `step ${stepNo}: the files of COPY '${src}' unpack to ${unpackedBytes} bytes, more than the server's limit of ${maxUnpackedBytes}`,
        { step: stepNo },
      );
    }
    record.log.add("debug", `files of COPY '${src}': ${verdict === "verified" ? "match their files hash" : "kept as uploaded for this template (directory sizes depend on the client's filesystem)"}`, stepNo);
  }

  close(): void {
    clearInterval(this.timer);
  }

  /** Uploads are per template: only a template that exists or has a build reserved may have them. */
  private requireKnownTemplate(templateId: string): void {
    if (this.deps.store.get(templateId) || this.deps.registry.hasTemplate(templateId)) return;
    throw new TemplateBuildError(Code.NotFound, `template ${templateId.slice(0, 64)} not found`);
  }
}
