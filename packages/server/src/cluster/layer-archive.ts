// A layer directory as bytes other nodes can unpack into the same overlayfs lower layer: GNU tar with what overlayfs
// reads kept (numeric owners, modes, every xattr namespace — trusted.overlay.opaque among them —, whiteouts as 0/0
// character devices, symlinks, hard links), entries sorted by name and the pax atime/ctime records dropped, so that
// the same directory gives the same archive and the archive's sha256 names its content. Tar runs as a child process:
// it knows these file kinds better than any JavaScript archiver, and Debian ships it.
import { spawn, type ChildProcessByStdio } from "node:child_process";
import { createHash } from "node:crypto";
import { createWriteStream } from "node:fs";
import { rm } from "node:fs/promises";
import type { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { BurrowError, Code } from "@burrow/protocol";

const TAR = "tar";
const COMMON = ["--format=posix", "--xattrs", "--xattrs-include=*", "--numeric-owner"];

export interface PackedLayer {
  /** sha256 of the archive, hex. */
  digest: string;
  size: number;
}

type Tar = ChildProcessByStdio<Writable | null, Readable | null, Readable>;

function exited(tar: Tar, what: string): Promise<void> {
  let stderr = "";
  tar.stderr.setEncoding("utf8").on("data", (chunk: string) => void (stderr.length < 4096 && (stderr += chunk)));
  return new Promise((resolve, reject) => {
    tar.once("error", reject);
    tar.once("close", (code, signal) =>
      code === 0 ? resolve() : reject(new BurrowError(Code.Internal, `tar could not ${what}: ${stderr.trim() || `exit ${code ?? signal}`}`, { reason: "layer_archive_failed" })),
    );
  });
}

/** Archive `dir` into `file` (created), hashing what is written. */
export async function packLayer(dir: string, file: string, signal?: AbortSignal): Promise<PackedLayer> {
  const tar = spawn(
    TAR,
    [
      "--create",
      "--file=-",
      `--directory=${dir}`,
      ...COMMON,
      "--sort=name",
      // Access and change times differ between two reads of the same directory; nothing in a sandbox needs them.
      "--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime",
      ".",
    ],
    { stdio: ["ignore", "pipe", "pipe"], ...(signal ? { signal } : {}) },
  );
  const done = exited(tar, `archive ${dir}`);
  const hash = createHash("sha256");
  let size = 0;
  try {
    await Promise.all([
      pipeline(
        tar.stdout!,
        async function* (source: AsyncIterable<Buffer>) {
          for await (const chunk of source) {
            hash.update(chunk);
            size += chunk.length;
            yield chunk;
          }
        },
        createWriteStream(file),
        ...(signal ? [{ signal }] : []),
      ),
      done,
    ]);
  } catch (err) {
    await rm(file, { force: true });
    throw err;
  }
  return { digest: hash.digest("hex"), size };
}

/**
 * Unpack an archive streamed from `source` into `dir` (an empty directory), checking as it streams that its sha256 is
 * `digest`. A mismatch is a DataLoss error; `dir` is then emptied by the caller (it removes what it made on failure).
 */
export async function unpackLayer(source: AsyncIterable<Uint8Array>, digest: string, dir: string, signal?: AbortSignal): Promise<void> {
  const tar = spawn(TAR, ["--extract", "--file=-", `--directory=${dir}`, ...COMMON, "--same-owner", "--preserve-permissions"], {
    stdio: ["pipe", "ignore", "pipe"],
    ...(signal ? { signal } : {}),
  });
  const done = exited(tar, `unpack a layer into ${dir}`);
  // Its failure is reported by the exit, not by the pipe it closed.
  tar.stdin!.on("error", () => undefined);
  const hash = createHash("sha256");
  let mismatch: BurrowError | undefined;
  try {
    await pipeline(
      source,
      async function* (chunks: AsyncIterable<Uint8Array>) {
        for await (const chunk of chunks) {
          hash.update(chunk);
          yield chunk;
        }
        const got = hash.digest("hex");
        // Checked before tar sees the end of its input: a corrupt archive is never taken as complete.
        if (got !== digest) {
          mismatch = new BurrowError(Code.DataLoss, `layer object ${digest} is corrupt: its bytes hash to ${got}`, { reason: "layer_digest_mismatch" });
          throw mismatch;
        }
      },
      tar.stdin!,
    );
  } catch (err) {
    tar.kill("SIGKILL");
    await done.catch(() => undefined);
    throw mismatch ?? err;
  }
  await done;
}
