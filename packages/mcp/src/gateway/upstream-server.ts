// One configured MCP server behind the gateway: started as the sandbox user, initialized, its tools listed; when it
// dies it is started again (with a growing pause while it keeps dying), and a tool call it was handling — or that
// arrives while it cannot be started — gets a tool error that says what happened.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { CallToolResultSchema, type CallToolResult, type Tool } from "@modelcontextprotocol/sdk/types.js";
import { ChildTransport, type ChildExit } from "./child-transport.js";
import type { Account, SpawnSpec } from "./server-command.js";

const STDERR_TAIL_BYTES = 2048;
const RESTART_DELAYS_MS = [0, 500, 1_000, 2_000, 5_000, 10_000, 30_000];
/** A server that ran this long without dying starts the backoff over. */
const HEALTHY_AFTER_MS = 60_000;
/** How long a tool call waits for a restarting server. */
const CALL_WAIT_MS = 15_000;
/** Longest a single tool call may take; progress from the server extends it. */
const CALL_TIMEOUT_MS = 10 * 60_000;

interface Connection {
  client: Client;
  transport: ChildTransport;
  startedAt: number;
  exit?: ChildExit;
  stderr: string;
}

export function describeExit(exit: ChildExit): string {
  if (exit.error) return exit.error.message;
  if (exit.signal) return `killed by ${exit.signal}`;
  return `exit code ${exit.code}`;
}

export class UpstreamServer {
  tools: Tool[] = [];
  /** Called when a restarted server lists different tools. */
  onToolsChanged?: () => void;

  private current: Connection | undefined;
  private starting: Promise<Connection> | undefined;
  private failures = 0;
  private lastFailure: string | undefined;
  private closed = false;
  private restartTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly name: string,
    private readonly spec: SpawnSpec,
    private readonly account: Account,
    private readonly log: (line: string) => void,
    private readonly startTimeoutMs = 30_000,
  ) {}

  /** Starts the server and lists its tools; rejects (with its stderr) when it cannot. */
  async start(): Promise<void> {
    await this.connect();
  }

  private connect(): Promise<Connection> {
    this.starting ??= this.spawn().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async spawn(): Promise<Connection> {
    const conn: Partial<Connection> & { stderr: string } = { stderr: "" };
    const transport = new ChildTransport({
      spec: this.spec,
      uid: this.account.uid,
      gid: this.account.gid,
      onStderr: (chunk) => {
        const text = chunk.toString("utf8");
        conn.stderr = (conn.stderr + text).slice(-STDERR_TAIL_BYTES);
        for (const line of text.split("\n")) if (line.trim()) this.log(`[${this.name}] ${line}`);
      },
      onExit: (exit) => {
        conn.exit = exit;
        this.exited(conn as Connection, exit);
      },
    });
    const client = new Client({ name: "burrow-mcp-gateway", version: "1.0.0" });
    Object.assign(conn, { client, transport, startedAt: Date.now() });
    const timeout = AbortSignal.timeout(this.startTimeoutMs);
    try {
      await client.connect(transport, { signal: timeout, timeout: this.startTimeoutMs });
      const tools: Tool[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : undefined, { signal: timeout, timeout: this.startTimeoutMs });
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor);
      const changed = JSON.stringify(tools) !== JSON.stringify(this.tools);
      this.tools = tools;
      this.current = conn as Connection;
      this.log(`[${this.name}] ready with ${tools.length} tool(s), pid ${transport.pid}`);
      if (changed && this.onToolsChanged) this.onToolsChanged();
      return conn as Connection;
    } catch (error) {
      await transport.close().catch(() => undefined);
      const why = conn.exit ? describeExit(conn.exit) : (error as Error).message;
      const tail = conn.stderr.trim();
      throw new Error(`MCP server '${this.name}' did not start (${why})${tail ? `: ${tail}` : ""}`);
    }
  }

  private exited(conn: Connection, exit: ChildExit): void {
    if (this.current !== conn) return;
    this.current = undefined;
    if (this.closed) return;
    const healthy = Date.now() - conn.startedAt > HEALTHY_AFTER_MS;
    this.failures = healthy ? 1 : this.failures + 1;
    this.lastFailure = `${describeExit(exit)}${conn.stderr.trim() ? `: ${conn.stderr.trim()}` : ""}`;
    this.log(`[${this.name}] exited (${describeExit(exit)}); restarting`);
    this.scheduleRestart();
  }

  private scheduleRestart(): void {
    if (this.closed || this.restartTimer) return;
    const delay = RESTART_DELAYS_MS[Math.min(this.failures - 1, RESTART_DELAYS_MS.length - 1)] ?? 0;
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      this.connect().catch((error: unknown) => {
        this.failures++;
        this.lastFailure = (error as Error).message;
        this.log(`[${this.name}] restart failed: ${(error as Error).message}`);
        this.scheduleRestart();
      });
    }, delay);
  }

  /** The running connection, waiting a while for one that is being restarted. */
  private async ready(): Promise<Connection | undefined> {
    if (this.current) return this.current;
    const deadline = Date.now() + CALL_WAIT_MS;
    while (!this.closed && Date.now() < deadline) {
      if (this.current) return this.current;
      if (this.starting) {
        try {
          return await this.starting;
        } catch {
          // the next attempt is scheduled; keep waiting until the deadline
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return this.current;
  }

  async callTool(name: string, args: Record<string, unknown> | undefined, signal?: AbortSignal): Promise<CallToolResult> {
    const conn = await this.ready();
    if (!conn) {
      return toolError(`MCP server '${this.name}' is not running${this.lastFailure ? ` (last exit: ${this.lastFailure})` : ""}; the gateway keeps restarting it`);
    }
    try {
      const request = { method: "tools/call" as const, params: { name, ...(args ? { arguments: args } : {}) } };
      return await conn.client.request(request, CallToolResultSchema, { signal, timeout: CALL_TIMEOUT_MS, resetTimeoutOnProgress: true });
    } catch (error) {
      if (conn.exit) {
        const tail = conn.stderr.trim();
        return toolError(
          `MCP server '${this.name}' crashed while handling the call (${describeExit(conn.exit)})${tail ? `: ${tail}` : ""}; it is being restarted`,
        );
      }
      throw error;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.restartTimer);
    const conn = this.current ?? (await this.starting?.catch(() => undefined));
    this.current = undefined;
    await conn?.transport.close();
  }
}

export function toolError(text: string): CallToolResult {
  return { isError: true, content: [{ type: "text", text }] };
}
