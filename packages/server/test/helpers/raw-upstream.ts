// A TCP server that answers each request with exactly the bytes the request asks for, standing in for a sandbox
// process that speaks broken HTTP. The request path says what to send:
//   /raw/<base64url bytes>[?fill=<n>&hold=<ms>&tail=<base64url bytes>]
//        write the bytes, then n times "a", then (after hold ms) the tail, and close
//   /silent   accept the request, never answer
import { createServer, type Server, type Socket } from "node:net";

export interface RawUpstream {
  port: number;
  close(): Promise<void>;
}

/** The path that makes the raw upstream answer `bytes`, `fill` times "a", then after `holdMs` the `tail`, and close. */
export function rawPath(bytes: string | Buffer, more: { fill?: number; holdMs?: number; tail?: string | Buffer } = {}): string {
  const b64 = (b: string | Buffer) => (typeof b === "string" ? Buffer.from(b, "latin1") : b).toString("base64url");
  const query = new URLSearchParams();
  if (more.fill) query.set("fill", String(more.fill));
  if (more.holdMs) query.set("hold", String(more.holdMs));
  if (more.tail !== undefined) query.set("tail", b64(more.tail));
  const search = query.toString();
  return `/raw/${b64(bytes)}${search ? `?${search}` : ""}`;
}

export async function startRawUpstream(): Promise<RawUpstream> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    let head = "";
    const onData = (chunk: Buffer) => {
      head += chunk.toString("latin1");
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) return;
      socket.off("data", onData);
      socket.resume();
      answer(socket, head.slice(0, head.indexOf(" HTTP/")).split(" ")[1] ?? "/");
    };
    socket.on("data", onData);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

function answer(socket: Socket, path: string): void {
  const url = new URL(path, "http://upstream.invalid");
  if (url.pathname === "/silent") return;
  const match = /^\/raw\/([A-Za-z0-9_-]*)$/.exec(url.pathname);
  if (!match) {
    socket.end("HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    return;
  }
  socket.write(Buffer.from(match[1]!, "base64url"));
  const fill = Number(url.searchParams.get("fill") ?? 0);
  if (fill) socket.write(Buffer.alloc(fill, "a"));
  const tail = Buffer.from(url.searchParams.get("tail") ?? "", "base64url");
  const hold = Number(url.searchParams.get("hold") ?? 0);
  if (!hold) {
    socket.end(tail);
    return;
  }
  const timer = setTimeout(() => socket.end(tail), hold);
  socket.on("close", () => clearTimeout(timer));
}
