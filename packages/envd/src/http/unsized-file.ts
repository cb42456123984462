import { constants, open as openFd, type Stats } from "node:fs";
import { open, statfs } from "node:fs/promises";
import { Socket } from "node:net";
import { Readable } from "node:stream";
import { promisify } from "node:util";

// Filesystems whose files are generated when read: stat gives no content length there (procfs says 0, sysfs
// says one page whatever the attribute holds, cgroupfs says 0).
const PSEUDO_FS_MAGIC = new Set([
  0x9fa0, // proc
  0x62656572, // sysfs
  0x27e0eb, // cgroup
  0x63677270, // cgroup2
  0x64626720, // debugfs
  0x74726163, // tracefs
  0x73636673, // securityfs
  0x62656570, // configfs
]);

/**
 * Whether stat cannot tell the length of a file's content: a FIFO, a file on a pseudo filesystem, or an empty
 * regular file (cheap to stream, and other pseudo files report 0 as well). Such files are served with chunked
 * encoding and read to EOF, never with a Content-Length from stat.
 */
export async function hasUnknownSize(path: string, s: Stats): Promise<boolean> {
  if (s.isFIFO() || (s.isFile() && s.size === 0)) return true;
  const fs = await statfs(path).catch(() => undefined);
  return fs !== undefined && PSEUDO_FS_MAGIC.has(fs.type);
}

const FIRST_READ = 64 * 1024;

/**
 * Opens a file of unknown size and reads its first chunk before any header is sent, so that what fails early
 * (EACCES at open, EIO or EINVAL on the first read of a sysfs attribute) still becomes a proper error response.
 * The result yields that chunk and then the rest until EOF.
 */
export async function openUnsizedFile(path: string, s: Stats): Promise<Readable> {
  if (s.isFIFO()) return openFifo(path);
  const fh = await open(path, "r");
  try {
    const first = Buffer.allocUnsafe(FIRST_READ);
    const { bytesRead } = await fh.read(first, 0, FIRST_READ, null);
    if (bytesRead === 0) {
      await fh.close();
      return Readable.from([]);
    }
    // the handle's position is after the first chunk: the stream goes on from there (start omitted), and
    // destroying it (a client that goes away) closes the handle
    const stream = fh.createReadStream({ autoClose: true });
    stream.unshift(first.subarray(0, bytesRead));
    return stream;
  } catch (err) {
    await fh.close().catch(() => undefined);
    throw err;
  }
}

/**
 * A FIFO reads like `cat` reads it: what its writers send until the last one closes, waiting for a writer if
 * none is there yet. It is opened non-blocking and read through the event loop, because a blocking open or
 * read would hold one of libuv's few pool threads for as long as that wait lasts; a client that gives up
 * closes the response, which destroys the reader.
 */
async function openFifo(path: string): Promise<Readable> {
  // a raw descriptor, not a FileHandle (whose collection would close the fd under the socket)
  const fd = await promisify(openFd)(path, constants.O_RDONLY | constants.O_NONBLOCK);
  // the socket owns the descriptor from here on and closes it when it ends or is destroyed
  return new Socket({ fd, readable: true, writable: false });
}
