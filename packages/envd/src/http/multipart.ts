import type { Readable } from "node:stream";
import { BurrowError, Code } from "@burrow/protocol/errors";

export interface MultipartPart {
  /** Form field name (`name=`). */
  name: string;
  /** `filename=` (the SDK puts the destination path here). */
  filename: string | undefined;
  /** The part's bytes; must be fully consumed (or drained) before the next part is produced. */
  body: AsyncIterable<Buffer>;
}

const MAX_HEADER_BYTES = 16 * 1024;

/** The `boundary` parameter of a multipart/form-data Content-Type. */
export function multipartBoundary(contentType: string): string {
  const m = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  const b = m?.[1] ?? m?.[2];
  if (!b || b.length > 200) throw new BurrowError(Code.InvalidArgument, "multipart body without a valid boundary");
  return b;
}

/**
 * Streaming multipart/form-data reader: parts are yielded one at a time and their bodies stream, so an upload of
 * any size never sits in memory. Only what /files needs: Content-Disposition name/filename, no nested multiparts.
 */
export async function* readMultipart(source: Readable, boundary: string): AsyncGenerator<MultipartPart> {
  // not destroying the source when a part fails keeps the connection able to carry the error response
  const iter = (source.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  let buf: Buffer = Buffer.alloc(0);
  let ended = false;
  const pull = async (): Promise<boolean> => {
    if (ended) return false;
    const r = await iter.next();
    if (r.done) {
      ended = true;
      return false;
    }
    buf = buf.length ? Buffer.concat([buf, r.value]) : r.value;
    return true;
  };
  const delimiter = Buffer.from(`\r\n--${boundary}`);

  // preamble up to the first boundary (which may sit at the very start, without the leading CRLF)
  buf = Buffer.from("\r\n");
  for (;;) {
    const i = buf.indexOf(delimiter);
    if (i >= 0) {
      buf = buf.subarray(i + delimiter.length);
      break;
    }
    if (buf.length > delimiter.length) buf = buf.subarray(buf.length - delimiter.length);
    if (!(await pull())) throw new BurrowError(Code.InvalidArgument, "multipart body has no boundary");
  }

  for (;;) {
    while (buf.length < 2) if (!(await pull())) throw new BurrowError(Code.InvalidArgument, "truncated multipart body");
    if (buf[0] === 0x2d && buf[1] === 0x2d) return; // "--": closing delimiter
    // headers: after the boundary line's CRLF, until CRLFCRLF
    let headerEnd: number;
    for (;;) {
      headerEnd = buf.indexOf("\r\n\r\n");
      if (headerEnd >= 0) break;
      if (buf.length > MAX_HEADER_BYTES) throw new BurrowError(Code.InvalidArgument, "multipart part headers too large");
      if (!(await pull())) throw new BurrowError(Code.InvalidArgument, "truncated multipart part headers");
    }
    const headerText = buf.subarray(0, headerEnd).toString("utf8");
    buf = buf.subarray(headerEnd + 4);
    const disposition = /^content-disposition:(.*)$/im.exec(headerText)?.[1] ?? "";
    const name = param(disposition, "name") ?? "";
    const filename = param(disposition, "filename");

    let partDone = false;
    async function* body(): AsyncGenerator<Buffer> {
      for (;;) {
        const i = buf.indexOf(delimiter);
        if (i >= 0) {
          if (i > 0) yield buf.subarray(0, i);
          buf = buf.subarray(i + delimiter.length);
          partDone = true;
          return;
        }
        // keep a tail that could be the start of a delimiter split across chunks
        const safe = buf.length - delimiter.length;
        if (safe > 0) {
          const out = buf.subarray(0, safe);
          buf = buf.subarray(safe);
          yield out;
        }
        if (!(await pull())) throw new BurrowError(Code.InvalidArgument, "truncated multipart body");
      }
    }
    const part = body();
    yield { name, filename, body: part };
    if (!partDone) for await (const _ of part) void _; // consumer skipped (part of) the body
  }
}

function param(header: string, key: string): string | undefined {
  const star = new RegExp(`(?:^|;)\\s*${key}\\*=([^;]+)`, "i").exec(header);
  if (star?.[1]) {
    const v = star[1].trim().replace(/^UTF-8''/i, "");
    try {
      return decodeURIComponent(v);
    } catch {
      return v;
    }
  }
  const m = new RegExp(`(?:^|;)\\s*${key}=(?:"((?:[^"\\\\]|\\\\.)*)"|([^;]*))`, "i").exec(header);
  if (!m) return undefined;
  return m[1] !== undefined ? m[1].replace(/\\(.)/g, "$1") : m[2]?.trim();
}
