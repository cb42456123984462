// Directory watching: every event type, entries, recursion and its absence (SDK test sandbox/files/watch).
import { describe, expect } from "vitest";
import { FileType, FilesystemEventType, NotFoundError, type FilesystemEvent } from "e2b";
import { sandboxTest } from "./env.js";

type Event = FilesystemEvent & { entry?: { path: string; type?: FileType; size: number } };

async function until(predicate: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const has = (events: Event[], name: string, type: FilesystemEventType) => events.some((e) => e.name === name && e.type === type);

describe("watchDir", () => {
  sandboxTest("create, write, chmod, rename and remove events", async ({ sandbox }) => {
    await sandbox.files.makeDir("ev");
    const events: Event[] = [];
    const handle = await sandbox.files.watchDir("ev", (e) => void events.push(e));
    await sandbox.files.write("ev/a.txt", "1");
    await until(() => has(events, "a.txt", FilesystemEventType.CREATE), "create");
    await sandbox.commands.run("echo more >> ev/a.txt");
    await until(() => has(events, "a.txt", FilesystemEventType.WRITE), "write");
    await sandbox.commands.run("chmod 600 ev/a.txt");
    await until(() => has(events, "a.txt", FilesystemEventType.CHMOD), "chmod");
    await sandbox.files.rename("ev/a.txt", "ev/b.txt");
    await until(() => has(events, "a.txt", FilesystemEventType.RENAME), "rename (old name)");
    await until(() => has(events, "b.txt", FilesystemEventType.CREATE), "create (new name)");
    await sandbox.files.remove("ev/b.txt");
    await until(() => has(events, "b.txt", FilesystemEventType.REMOVE), "remove");
    await handle.stop();
  });

  sandboxTest("includeEntry attaches the entry; without it there is none", async ({ sandbox }) => {
    await sandbox.files.makeDir("ent");
    const withEntry: Event[] = [];
    const without: Event[] = [];
    const h1 = await sandbox.files.watchDir("ent", (e) => void withEntry.push(e), { includeEntry: true });
    const h2 = await sandbox.files.watchDir("ent", (e) => void without.push(e));
    await sandbox.files.write("ent/f.txt", "12345");
    await sandbox.files.makeDir("ent/d");
    await until(() => has(withEntry, "d", FilesystemEventType.CREATE) && has(without, "d", FilesystemEventType.CREATE), "events");
    const file = withEntry.find((e) => e.name === "f.txt" && e.entry);
    expect(file?.entry).toMatchObject({ path: "/home/user/ent/f.txt", type: FileType.FILE });
    expect(withEntry.find((e) => e.name === "d")?.entry).toMatchObject({ path: "/home/user/ent/d", type: FileType.DIR });
    expect(without.every((e) => e.entry === undefined)).toBe(true);
    await h1.stop();
    await h2.stop();
  });

  sandboxTest("non-recursive watches ignore nested changes; recursive ones see them", async ({ sandbox }) => {
    await sandbox.files.makeDir("nr/inner");
    const flat: Event[] = [];
    const deep: Event[] = [];
    const h1 = await sandbox.files.watchDir("nr", (e) => void flat.push(e));
    const h2 = await sandbox.files.watchDir("nr", (e) => void deep.push(e), { recursive: true });
    await sandbox.files.write("nr/inner/hidden.txt", "h");
    await until(() => has(deep, "inner/hidden.txt", FilesystemEventType.CREATE), "nested create (recursive)");
    // A top-level sentinel: once the flat watcher reports it, anything nested would have arrived before it.
    await sandbox.files.write("nr/sentinel", "s");
    await until(() => has(flat, "sentinel", FilesystemEventType.CREATE), "sentinel");
    expect(flat.filter((e) => e.name.includes("hidden"))).toEqual([]);
    await h1.stop();
    await h2.stop();
  });

  sandboxTest("recursive watches pick up directories created after the watch started", async ({ sandbox }) => {
    await sandbox.files.makeDir("late");
    const events: Event[] = [];
    const handle = await sandbox.files.watchDir("late", (e) => void events.push(e), { recursive: true });
    await sandbox.files.makeDir("late/new/deeper");
    await until(() => has(events, "new", FilesystemEventType.CREATE), "new dir");
    await sandbox.files.write("late/new/deeper/x.txt", "x");
    await until(() => has(events, "new/deeper/x.txt", FilesystemEventType.CREATE), "file in a new dir");
    await handle.stop();
  });

  sandboxTest("stop ends delivery; a missing directory is NotFoundError", async ({ sandbox }) => {
    await sandbox.files.makeDir("st");
    const events: Event[] = [];
    const handle = await sandbox.files.watchDir("st", (e) => void events.push(e));
    await sandbox.files.write("st/1", "1");
    await until(() => has(events, "1", FilesystemEventType.CREATE), "first event");
    await handle.stop();
    const count = events.length;
    await sandbox.files.write("st/2", "2");
    await new Promise((r) => setTimeout(r, 500));
    expect(events.slice(count).filter((e) => e.name === "2")).toEqual([]);
    await expect(sandbox.files.watchDir("no-such-dir", () => undefined)).rejects.toBeInstanceOf(NotFoundError);
  });

  sandboxTest("the watch ends at its timeout with onExit", async ({ sandbox }) => {
    await sandbox.files.makeDir("to");
    let exited: unknown = "not yet";
    await sandbox.files.watchDir("to", () => undefined, { timeoutMs: 1_000, onExit: (err) => void (exited = err) });
    await until(() => exited !== "not yet", "onExit");
    expect(exited).toBeInstanceOf(Error);
  });
});
