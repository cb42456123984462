// The checkpoints of this host: their records (loaded at start, the directory is the truth), the tree they form,
// which checkpoint each live sandbox's files descend from (its head), and removal. Checkpoints outlive their
// sandbox: they stay until deleted, so an agent can keep branching from them after the sandbox ended.
//
// Every change to the tree (a checkpoint added or deleted, a head moved) and every copy taken from a checkpoint's
// files runs under one lock, so a deletion never removes a checkpoint a copy is being taken from or a parent a new
// checkpoint is being recorded under.
import { mkdir, readFile, readdir, rename, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "../logger.js";
import { removeTree } from "../storage/remove-tree.js";
import {
  checkpointDir,
  checkpointFilesDir,
  readCheckpointRecord,
  recordFile,
  writeCheckpointRecord,
  type CheckpointRecordFile,
} from "./checkpoint-record.js";

const HEADS_FILE = "heads.json";
/** Copies being assembled (children's and rollbacks' writable dirs, replaced sandbox dirs); emptied at start. */
const TMP_DIR = ".tmp";

export class CheckpointStore {
  private readonly records = new Map<string, CheckpointRecordFile>();
  /** sandbox id → the checkpoint its files descend from. */
  private heads = new Map<string, string>();
  private lock: Promise<unknown> = Promise.resolve();
  private headWrites: Promise<unknown> = Promise.resolve();

  constructor(
    readonly root: string,
    private readonly logger: Logger,
  ) {}

  get tmpDir(): string {
    return join(this.root, TMP_DIR);
  }

  /**
   * Read every record; remove directories without a valid one (a checkpoint half made or half deleted) and what
   * the temporary directory holds; forget heads of sandboxes that are not live and heads naming no checkpoint.
   */
  async load(isLive: (sandboxId: string) => boolean): Promise<void> {
    await mkdir(this.tmpDir, { recursive: true });
    // One by one: entries may be subvolumes, which a removal of the whole directory would not cross.
    for (const name of await readdir(this.tmpDir)) {
      await removeTree(join(this.tmpDir, name)).catch((error: unknown) =>
        this.logger.error({ path: join(this.tmpDir, name), err: error }, "could not remove a checkpoint copy left by a previous run"),
      );
    }
    for (const name of await readdir(this.root)) {
      if (name === TMP_DIR || name === HEADS_FILE || name === `${HEADS_FILE}.tmp`) continue;
      const record = await readCheckpointRecord(this.root, name);
      if (record) {
        this.records.set(name, record);
        continue;
      }
      this.logger.warn({ checkpointId: name }, "removing a checkpoint directory without a valid record");
      await this.removeDir(name).catch((error: unknown) =>
        this.logger.error({ checkpointId: name, err: error }, "could not remove a checkpoint directory without a record; the next start retries"),
      );
    }
    // A parent that is gone (its directory was unreadable and removed) makes its children roots.
    for (const record of this.records.values()) {
      if (record.parentId !== null && !this.records.has(record.parentId)) {
        const root = { ...record, parentId: null };
        this.records.set(record.checkpointId, root);
        await writeCheckpointRecord(this.root, root).catch(() => undefined);
      }
    }
    try {
      const parsed = JSON.parse(await readFile(join(this.root, HEADS_FILE), "utf8")) as Record<string, unknown>;
      for (const [sandboxId, checkpointId] of Object.entries(parsed)) {
        if (typeof checkpointId === "string" && this.records.has(checkpointId) && isLive(sandboxId)) this.heads.set(sandboxId, checkpointId);
      }
    } catch {
      this.heads = new Map();
    }
    await this.persistHeads();
  }

  /** Run `fn` with the tree to itself (see the file's comment). */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.lock.then(fn);
    this.lock = result.catch(() => undefined);
    return result;
  }

  get(checkpointId: string): CheckpointRecordFile | undefined {
    return this.records.get(checkpointId);
  }

  all(): CheckpointRecordFile[] {
    return [...this.records.values()];
  }

  children(checkpointId: string): CheckpointRecordFile[] {
    return this.all().filter((r) => r.parentId === checkpointId);
  }

  /** The checkpoint and every descendant, leaves first (the order they can be deleted in). */
  subtreeLeavesFirst(checkpointId: string): string[] {
    const order: string[] = [];
    const visit = (id: string) => {
      for (const child of this.children(id)) visit(child.checkpointId);
      order.push(id);
    };
    visit(checkpointId);
    return order;
  }

  rootOf(checkpointId: string): string {
    let id = checkpointId;
    for (let parent = this.records.get(id)?.parentId; parent; parent = this.records.get(id)?.parentId) id = parent;
    return id;
  }

  /** Checkpoints in the tree rooted at `rootId`, parents before children, siblings oldest first. */
  tree(rootId: string): CheckpointRecordFile[] {
    const out: CheckpointRecordFile[] = [];
    const visit = (id: string) => {
      const record = this.records.get(id);
      if (!record) return;
      out.push(record);
      const kids = this.children(id).sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.checkpointId.localeCompare(b.checkpointId));
      for (const kid of kids) visit(kid.checkpointId);
    };
    visit(rootId);
    return out;
  }

  /** The roots of every tree the sandbox has a checkpoint in or descends from. */
  rootsOfSandbox(sandboxId: string): string[] {
    const roots = new Set<string>();
    const head = this.heads.get(sandboxId);
    if (head) roots.add(this.rootOf(head));
    for (const record of this.records.values()) if (record.sandboxId === sandboxId) roots.add(this.rootOf(record.checkpointId));
    return [...roots];
  }

  usesTemplate(templateId: string): boolean {
    for (const record of this.records.values()) if (record.templateId === templateId) return true;
    return false;
  }

  head(sandboxId: string): string | undefined {
    return this.heads.get(sandboxId);
  }

  async setHead(sandboxId: string, checkpointId: string): Promise<void> {
    this.heads.set(sandboxId, checkpointId);
    await this.persistHeads();
  }

  /** The sandbox ended: nothing descends from anything any more. */
  async dropHead(sandboxId: string): Promise<void> {
    if (!this.heads.delete(sandboxId)) return;
    await this.persistHeads();
  }

  /** Record a checkpoint whose files are in place. */
  async add(record: CheckpointRecordFile): Promise<void> {
    await writeCheckpointRecord(this.root, record);
    this.records.set(record.checkpointId, record);
  }

  /**
   * Delete one checkpoint that has no children: sandboxes whose files descended from it now descend from its
   * parent. The record goes first (the checkpoint no longer exists from then on), then its files; files that
   * could not be removed are removed at the next start.
   */
  async remove(checkpointId: string): Promise<void> {
    const record = this.records.get(checkpointId);
    if (!record) return;
    await unlink(recordFile(this.root, checkpointId));
    this.records.delete(checkpointId);
    let moved = false;
    for (const [sandboxId, head] of this.heads) {
      if (head !== checkpointId) continue;
      if (record.parentId) this.heads.set(sandboxId, record.parentId);
      else this.heads.delete(sandboxId);
      moved = true;
    }
    if (moved) await this.persistHeads();
    await this.removeDir(checkpointId).catch((error: unknown) =>
      this.logger.error({ checkpointId, err: error }, "could not remove a deleted checkpoint's files; the next start retries"),
    );
  }

  /** A checkpoint's directory: its files (a subvolume, deleted as one) first, then the rest. */
  private async removeDir(checkpointId: string): Promise<void> {
    await removeTree(checkpointFilesDir(this.root, checkpointId));
    await removeTree(checkpointDir(this.root, checkpointId));
  }

  private persistHeads(): Promise<void> {
    const write = this.headWrites.then(async () => {
      const file = join(this.root, HEADS_FILE);
      await writeFile(`${file}.tmp`, JSON.stringify(Object.fromEntries(this.heads)));
      await rename(`${file}.tmp`, file);
    });
    this.headWrites = write.catch(() => undefined);
    return write;
  }
}
