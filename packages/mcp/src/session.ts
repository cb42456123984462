// What the tools of one API key share: the connection, sandbox handles already connected (so a tool call costs
// one round trip to envd, not a connect first), the log book and the bus client.
import { Sandbox } from "@e2b/code-interpreter";
import { BusClient } from "@burrow/sdk";
import { sdkOptions, type BurrowConnection } from "./connection.js";
import { LogBook } from "./log-book.js";

const MAX_HANDLES = 256;
/** A handle older than this is connected again (the connect call also resumes a paused sandbox). */
const HANDLE_TTL_MS = 5 * 60_000;

export class BurrowSession {
  readonly logs = new LogBook();
  private readonly handles = new Map<string, { sandbox: Sandbox; at: number }>();
  private busClient: BusClient | undefined;

  constructor(readonly connection: BurrowConnection) {}

  get sdk(): ReturnType<typeof sdkOptions> {
    return sdkOptions(this.connection);
  }

  get bus(): BusClient {
    this.busClient ??= new BusClient({ baseUrl: this.connection.apiUrl, apiKey: this.connection.apiKey });
    return this.busClient;
  }

  /** A connected handle to a sandbox (resumed if it was paused). */
  async sandbox(sandboxId: string, signal?: AbortSignal): Promise<Sandbox> {
    const cached = this.handles.get(sandboxId);
    if (cached && Date.now() - cached.at < HANDLE_TTL_MS) return cached.sandbox;
    const sandbox = await Sandbox.connect(sandboxId, { ...this.sdk, ...(signal ? { signal } : {}) });
    this.remember(sandbox);
    return sandbox;
  }

  remember(sandbox: Sandbox): void {
    this.handles.delete(sandbox.sandboxId);
    this.handles.set(sandbox.sandboxId, { sandbox, at: Date.now() });
    for (const oldest of this.handles.keys()) {
      if (this.handles.size <= MAX_HANDLES) break;
      this.handles.delete(oldest);
    }
  }

  /** After a kill or pause, or a call that failed: the next call connects again. */
  forget(sandboxId: string): void {
    this.handles.delete(sandboxId);
  }
}
