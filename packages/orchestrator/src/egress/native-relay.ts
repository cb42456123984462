// The egress proxy's kernel relay: after the verdict, a connection that is spliced unchanged is handed to the splice
// relay (native/relay, an N-API addon built by native/build.sh), whose own thread moves its bytes with splice(2)
// through a pipe per direction. The bytes never enter Node, so bulk transfers neither copy through user space nor
// take the server's event loop from the API and the gateway (in JS the proxy moved a tenth of what the kernel does).
// The addon dup()s both descriptors; the Node sockets are then destroyed, which closes only Node's descriptors.
// Bytes Node had already read (the peeked ClientHello or request head, anything read since) go to the other side
// first. Without the addon (not built: no C compiler or Node headers) the proxy relays in JS and says so once.
import { createRequire } from "node:module";
import type { Socket } from "node:net";
import { fileURLToPath } from "node:url";

/** Bytes from the sandbox to the destination and back, as the audit records them. */
export interface RelayedBytes {
  bytesOut: number;
  bytesIn: number;
}

/** Which relay moves a spliced connection's bytes: the kernel (`native`, when the addon loads) or Node streams. */
export type RelayKind = "native" | "js";

export interface NativeRelay {
  /**
   * Relay `client` and `upstream` in the kernel from now on, `first` (read from the client already) going upstream
   * first; `done` gets the byte counts when both directions are over. The sockets are destroyed on success. False,
   * with both sockets untouched, when they cannot be handed over (not TCP, data still queued in Node, ended).
   */
  handOver(client: Socket, upstream: Socket, first: Buffer, done: (bytes: RelayedBytes) => void): boolean;
  /** Connections being relayed now. */
  readonly active: number;
  /** Close every relayed connection (each still reported to its `done`) and stop the relay's thread. */
  close(): void;
}

declare const handleBrand: unique symbol;
type RelayHandle = { readonly [handleBrand]: true };

/** native/relay/addon.c */
interface RelayAddon {
  create(onDone: (id: number, aToB: number, bToA: number, errno: number) => void): RelayHandle;
  add(handle: RelayHandle, id: number, fdA: number, fdB: number, headToB?: Buffer, headToA?: Buffer): void;
  active(handle: RelayHandle): number;
  stop(handle: RelayHandle): void;
  /** SO_ORIGINAL_DST of a descriptor: [ip, port], or undefined (not NAT'ed, not IPv4). Missing in older builds. */
  originalDestination?(fd: number): [string, number] | undefined;
  /** What the socket has received, read now without waiting, or undefined (nothing yet). Missing in older builds. */
  readNow?(fd: number, max: number): Buffer | undefined;
}

/** Where native/build.sh puts the addon (this file is src/egress/, compiled to dist/egress/). */
export const RELAY_ADDON_PATH = fileURLToPath(new URL("../../dist/native/burrow-relay.node", import.meta.url));

export interface RelayLogger {
  warn(obj: object, msg: string): void;
}

let loaded: { addon: RelayAddon } | { error: Error } | undefined;

/** The addon, loaded once per process; undefined (said once, to `logger` or as a process warning) when it cannot load. */
export function loadRelayAddon(logger?: RelayLogger): RelayAddon | undefined {
  if (!loaded) {
    try {
      loaded = { addon: createRequire(import.meta.url)(RELAY_ADDON_PATH) as RelayAddon };
    } catch (err) {
      loaded = { error: err as Error };
      const msg = `egress proxy: the splice relay (${RELAY_ADDON_PATH}) did not load, connections are relayed in JS (slower, on the event loop); build it with native/build.sh`;
      if (logger) logger.warn({ err: loaded.error.message }, msg);
      else process.emitWarning(`${msg}: ${loaded.error.message}`, { code: "BURROW_EGRESS_RELAY_JS" });
    }
  }
  return "addon" in loaded ? loaded.addon : undefined;
}

/** A kernel relay (its thread starts with the first connection), or undefined when the addon cannot load. */
export function createNativeRelay(logger?: RelayLogger): NativeRelay | undefined {
  const addon = loadRelayAddon(logger);
  if (!addon) return undefined;
  let handle: RelayHandle | undefined;
  let closed = false;
  let nextId = 1;
  const pending = new Map<number, (bytes: RelayedBytes) => void>();
  const onDone = (id: number, aToB: number, bToA: number) => {
    const done = pending.get(id);
    pending.delete(id);
    try {
      done?.({ bytesOut: aToB, bytesIn: bToA });
    } catch {
      // The caller's report failing must not throw into the addon's callback.
    }
  };
  return {
    handOver(client, upstream, first, done) {
      if (closed) return false;
      const fdA = fdOf(client);
      const fdB = fdOf(upstream);
      if (fdA === undefined || fdB === undefined || !handOverable(client) || !handOverable(upstream)) return false;
      // Nothing can be read between these lines and the destroys below: Node reads sockets only between callbacks.
      const fromClient = drain(client);
      const fromUpstream = drain(upstream);
      const id = nextId++;
      try {
        handle ??= addon.create(onDone);
        addon.add(handle, id, fdA, fdB, Buffer.concat([first, ...fromClient]), Buffer.concat(fromUpstream));
      } catch {
        if (fromClient.length > 0) client.unshift(Buffer.concat(fromClient));
        if (fromUpstream.length > 0) upstream.unshift(Buffer.concat(fromUpstream));
        return false;
      }
      pending.set(id, done);
      client.destroy();
      upstream.destroy();
      return true;
    },
    get active() {
      return handle && !closed ? addon.active(handle) : 0;
    },
    close() {
      if (closed) return;
      closed = true;
      if (handle) addon.stop(handle);
    },
  };
}

/**
 * Where a DNAT'ed connection was going (SO_ORIGINAL_DST, through the addon: Node has no such call), or undefined
 * when the addon cannot say (not loaded, not NAT'ed). The address of the listener itself for one not NAT'ed.
 */
export function socketOriginalDestination(socket: Socket, logger?: RelayLogger): { ip: string; port: number } | undefined {
  const fd = fdOf(socket);
  const addon = fd === undefined ? undefined : loadRelayAddon(logger);
  const dst = fd === undefined ? undefined : addon?.originalDestination?.(fd);
  return dst && { ip: dst[0], port: dst[1] };
}

/**
 * What a socket Node has not read from yet has received already, read (consumed) now, at most `max` bytes; undefined
 * when nothing is there or the addon cannot. Only for a socket Node has not read from: its next reads continue after.
 */
export function socketReadNow(socket: Socket, max: number, logger?: RelayLogger): Buffer | undefined {
  const fd = fdOf(socket);
  return fd === undefined ? undefined : loadRelayAddon(logger)?.readNow?.(fd, max);
}

function fdOf(socket: Socket): number | undefined {
  const fd = (socket as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
  return typeof fd === "number" && fd >= 0 ? fd : undefined;
}

/** Open both ways with nothing queued for writing in Node (what is queued would be lost with the socket). */
function handOverable(socket: Socket): boolean {
  return !socket.destroyed && !socket.connecting && !socket.writableEnded && socket.writableLength === 0;
}

/** What Node has read from the socket and nobody consumed yet. */
function drain(socket: Socket): Buffer[] {
  const chunks: Buffer[] = [];
  for (let chunk: Buffer | null; (chunk = socket.read() as Buffer | null) !== null; ) chunks.push(chunk);
  return chunks;
}
