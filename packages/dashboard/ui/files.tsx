// A file browser on envd: Filesystem.ListDir for a directory, GET /files to view a text file or download any
// file, POST /files to upload into the directory shown. The directory shown is watched (Filesystem.WatchDir, a
// server stream) and listed again shortly after anything in it changes, so files the sandbox writes appear live.
import { useEffect, useState } from "preact/hooks";
import { filesystemPb } from "@burrow/protocol";
import { bytes } from "./format.js";
import { readFile, uploadFile, type EnvdClients, type EnvdTarget } from "./envd.js";

/** Larger files are offered for download only. */
const VIEW_LIMIT = 256 * 1024;
/** A burst of changes (an unpacked archive) is listed once, this long after its last event. */
const RELIST_AFTER_MS = 200;

interface Entry {
  name: string;
  path: string;
  dir: boolean;
  size: number;
}

function parent(path: string): string {
  const cut = path.replace(/\/+$/, "").lastIndexOf("/");
  return cut <= 0 ? "/" : path.slice(0, cut);
}

export function Files({ target, clients }: { target: EnvdTarget; clients: EnvdClients }) {
  const [dir, setDir] = useState("/home/user");
  const [entries, setEntries] = useState<Entry[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [viewing, setViewing] = useState<{ path: string; text: string } | null>(null);
  const [reload, setReload] = useState(0);

  useEffect(() => {
    const controller = new AbortController();
    setEntries(null);
    clients.filesystem
      .listDir({ path: dir, depth: 1 }, { signal: controller.signal })
      .then((res) => {
        const list = res.entries.map((e) => ({ name: e.name, path: e.path, dir: e.type === filesystemPb.FileType.DIRECTORY, size: Number(e.size) }));
        list.sort((a, b) => Number(b.dir) - Number(a.dir) || a.name.localeCompare(b.name));
        setEntries(list);
        setError(null);
      })
      .catch((err: unknown) => {
        if (!controller.signal.aborted) setError(err instanceof Error ? err.message : String(err));
      });
    return () => controller.abort();
  }, [clients, dir, reload]);

  // Live: watch the directory shown; a change lists it again. The watch ends with the directory (or the sandbox).
  const [watching, setWatching] = useState(false);
  useEffect(() => {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    void (async () => {
      try {
        for await (const res of clients.filesystem.watchDir({ path: dir, recursive: false }, { signal: controller.signal })) {
          if (res.event.case === "start") setWatching(true);
          if (res.event.case !== "filesystem") continue;
          clearTimeout(timer);
          timer = setTimeout(() => setReload((n) => n + 1), RELIST_AFTER_MS);
        }
      } catch {
        // the directory went away, the sandbox ended or the page moved on: the listing still works by hand
      } finally {
        if (!controller.signal.aborted) setWatching(false);
      }
    })();
    return () => {
      clearTimeout(timer);
      controller.abort();
      setWatching(false);
    };
  }, [clients, dir]);

  const run = async (work: () => Promise<void>) => {
    try {
      setError(null);
      await work();
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    }
  };
  const view = (entry: Entry) =>
    run(async () => {
      const blob = await readFile(target, entry.path);
      setViewing({ path: entry.path, text: await blob.text() });
    });
  const download = (entry: Entry) =>
    run(async () => {
      const url = URL.createObjectURL(await readFile(target, entry.path));
      const a = document.createElement("a");
      a.href = url;
      a.download = entry.name;
      a.click();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    });
  const upload = (files: FileList | null) =>
    run(async () => {
      for (const file of Array.from(files ?? [])) await uploadFile(target, `${dir.replace(/\/+$/, "")}/${file.name}`, file);
      setReload((n) => n + 1);
    });

  return (
    <div class="files-panel">
      <div class="toolbar">
        <button onClick={() => setDir(parent(dir))} disabled={dir === "/"} title="parent directory">↑</button>
        <code id="files-dir">{dir}</code>
        <button onClick={() => setReload((n) => n + 1)}>Refresh</button>
        <span id="files-live" class="muted" data-live={String(watching)}>{watching ? "live" : ""}</span>
        <label class="upload">
          Upload
          <input id="file-upload" type="file" multiple onChange={(e) => void upload(e.currentTarget.files)} />
        </label>
      </div>
      {error && <p class="error" role="alert">{error}</p>}
      <ul class="entries" id="file-entries">
        {entries === null && !error && <li class="muted">loading…</li>}
        {entries?.map((e) => (
          <li key={e.path} data-path={e.path}>
            {e.dir ? (
              <a href="#" onClick={(ev) => (ev.preventDefault(), setDir(e.path))}>📁 {e.name}/</a>
            ) : (
              <>
                <a href="#" onClick={(ev) => (ev.preventDefault(), e.size <= VIEW_LIMIT ? void view(e) : void download(e))}>{e.name}</a>
                <span class="muted"> {bytes(e.size)}</span>
                <button class="link" onClick={() => void download(e)}>download</button>
              </>
            )}
          </li>
        ))}
      </ul>
      {viewing && (
        <div class="viewer">
          <div class="toolbar">
            <code>{viewing.path}</code>
            <button onClick={() => setViewing(null)}>Close</button>
          </div>
          <pre id="file-view">{viewing.text}</pre>
        </div>
      )}
    </div>
  );
}
