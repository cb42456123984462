// Used by build.mjs while it makes envd's V8 code cache: sends a running envd the requests a sandbox's first commands
// and file reads make (Connect's JSON format, as the SDKs and the orchestrator use it), so that the functions on
// their path are compiled when the cache is taken. Runs on the build host, against an envd on loopback.
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { Filesystem, Process } from "@burrow/protocol";

/** A few rounds: some paths (a stream's end, keepalive timers) are only taken once a previous request finished. */
const ROUNDS = 3;

/**
 * @param {string} baseUrl envd's address
 * @param {string} dir a directory that exists on the build host (a file is written and read in it)
 * @param {AbortSignal} signal
 */
export async function warmUp(baseUrl, dir, signal) {
  const transport = createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: false });
  const processes = createClient(Process, transport);
  const files = createClient(Filesystem, transport);
  // envd runs as the build's user here: commands start as that user, without the identity helper.
  const user = process.getuid?.() === 0 ? "root" : undefined;
  const headers = user ? { authorization: `Basic ${Buffer.from(`${user}:`).toString("base64")}` } : {};
  const file = `${dir}/warm-up.txt`;
  for (let round = 0; round < ROUNDS; round++) {
    const events = processes.start(
      { process: { cmd: "/bin/sh", args: ["-c", "echo warm; echo up >&2"], envs: { WARM: "1" }, cwd: dir } },
      { headers, signal },
    );
    for await (const event of events) void event;
    const write = await fetch(`${baseUrl}/files?path=${encodeURIComponent(file)}${user ? `&username=${user}` : ""}`, {
      method: "POST",
      body: (() => {
        const form = new FormData();
        form.append("file", new Blob(["warm"]), "warm-up.txt");
        return form;
      })(),
      signal,
    });
    if (!write.ok) throw new Error(`POST /files answered ${write.status}`);
    const read = await fetch(`${baseUrl}/files?path=${encodeURIComponent(file)}${user ? `&username=${user}` : ""}`, { signal });
    if (!read.ok) throw new Error(`GET /files answered ${read.status}`);
    await read.arrayBuffer();
    await files.stat({ path: file }, { headers, signal });
    await files.listDir({ path: dir, depth: 1 }, { headers, signal });
  }
}
