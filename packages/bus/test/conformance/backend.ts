import type { Bus } from "../../src/index.js";

/** What the conformance suite needs from a backend under test. */
export interface BusBackend {
  readonly name: string;
  /** A new bus client on the same backing store (another connection, or another handle on the same file). */
  open(): Promise<Bus>;
  /** Closes every client opened so far and restarts the store's server (embedded: reopen the file). */
  restart(): Promise<void>;
  /** Closes clients, stops servers, removes temp dirs; runs even when a test failed. */
  dispose(): Promise<void>;
}

export type BackendFactory = () => Promise<BusBackend>;

export const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
export const dec = (b: Uint8Array): string => new TextDecoder().decode(b);

let counter = 0;
/** Unique names per test so tests on one server never see each other's streams. */
export function uniq(prefix: string): string {
  return `${prefix}${Date.now().toString(36)}${(counter++).toString(36)}`;
}
