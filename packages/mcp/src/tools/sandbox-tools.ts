// Sandbox lifecycle: create, list, inspect, kill, timeouts, pause and resume, fork, snapshots (checkpoints) and
// creating from a snapshot (rolling back), all through the E2B API the server serves.
import { Sandbox } from "@e2b/code-interpreter";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { SandboxInfo } from "e2b";
import { z } from "zod";
import type { BurrowSession } from "../session.js";
import { ToolError } from "../tool-error.js";
import { defineTool } from "./tool-kit.js";

export const sandboxId = z.string().min(1).max(128).describe("Sandbox id, as create_sandbox returned it");
const timeoutSeconds = z.number().int().min(1).max(86_400);
const stringMap = z.record(z.string(), z.string());

/** Most sandboxes one list answer shows. */
const LIST_LIMIT = 200;

function info(s: SandboxInfo): Record<string, unknown> {
  return {
    sandboxId: s.sandboxId,
    templateId: s.templateId,
    ...(s.name ? { template: s.name } : {}),
    state: s.state,
    metadata: s.metadata,
    startedAt: s.startedAt.toISOString(),
    endAt: s.endAt.toISOString(),
    cpuCount: s.cpuCount,
    memoryMB: s.memoryMB,
  };
}

/** A create that waited on a template's first build past the HTTP client's header timeout (5 minutes). */
function isDroppedWait(error: unknown): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    const code = (e as { code?: string }).code;
    if (code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_SOCKET") return true;
  }
  return false;
}

interface CreateOptions {
  timeoutSeconds?: number | undefined;
  metadata?: Record<string, string> | undefined;
  envs?: Record<string, string> | undefined;
  allowInternetAccess?: boolean | undefined;
}

async function create(session: BurrowSession, template: string, opts: CreateOptions, signal: AbortSignal, progress: (m: string) => Promise<void>) {
  // The first create of a shipped template (code-interpreter-v1, mcp-gateway) builds it: minutes without an answer.
  // Progress notifications keep the client's request alive meanwhile, and a create whose HTTP wait was cut is
  // asked again (it waits for the same build).
  const ticker = setInterval(() => void progress(`waiting for the sandbox (a template's first build takes minutes)`), 15_000);
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        const sandbox = await Sandbox.create(template, {
          ...session.sdk,
          requestTimeoutMs: 0,
          signal,
          ...(opts.timeoutSeconds !== undefined ? { timeoutMs: opts.timeoutSeconds * 1000 } : {}),
          ...(opts.metadata ? { metadata: opts.metadata } : {}),
          ...(opts.envs ? { envs: opts.envs } : {}),
          ...(opts.allowInternetAccess !== undefined ? { allowInternetAccess: opts.allowInternetAccess } : {}),
        });
        session.remember(sandbox);
        return { sandboxId: sandbox.sandboxId, template };
      } catch (error) {
        if (attempt >= 4 || signal.aborted || !isDroppedWait(error)) throw error;
      }
    }
  } finally {
    clearInterval(ticker);
  }
}

export function registerSandboxTools(server: McpServer, session: BurrowSession): void {
  defineTool(
    server,
    session,
    "create_sandbox",
    {
      title: "Create a sandbox",
      description:
        "Start a new isolated Linux sandbox and return its id. Templates: 'base' (Debian with Python, git, curl; the default), " +
        "'code-interpreter-v1' (needed by run_code; built on first use), 'mcp-gateway', or any template or snapshot id of this server.",
      input: {
        template: z.string().min(1).max(256).default("base").describe("Template name or id, or a snapshot id"),
        timeoutSeconds: timeoutSeconds.optional().describe("Lifetime before it is killed (default 300)"),
        metadata: stringMap.optional().describe("Key/value metadata to attach"),
        envs: stringMap.optional().describe("Environment variables for its processes"),
        allowInternetAccess: z.boolean().optional().describe("Outbound internet access (default true)"),
      },
    },
    async (args, { session, signal, progress }) => create(session, args.template, args, signal, progress),
  );

  defineTool(
    server,
    session,
    "list_sandboxes",
    {
      title: "List sandboxes",
      description: "List running and paused sandboxes, optionally filtered by metadata or state.",
      readOnly: true,
      input: {
        metadata: stringMap.optional().describe("Only sandboxes with all of these metadata values"),
        state: z.array(z.enum(["running", "paused"])).optional().describe("Only sandboxes in these states"),
      },
    },
    async (args, { session }) => {
      const paginator = Sandbox.list({
        ...session.sdk,
        query: { ...(args.metadata ? { metadata: args.metadata } : {}), ...(args.state ? { state: args.state } : {}) },
      });
      const sandboxes: Record<string, unknown>[] = [];
      while (paginator.hasNext && sandboxes.length < LIST_LIMIT) sandboxes.push(...(await paginator.nextItems()).map(info));
      return { sandboxes: sandboxes.slice(0, LIST_LIMIT), truncated: paginator.hasNext || sandboxes.length > LIST_LIMIT };
    },
  );

  defineTool(
    server,
    session,
    "get_sandbox",
    { title: "Sandbox details", description: "State, template, limits, metadata and expiry of one sandbox.", readOnly: true, input: { sandboxId } },
    async (args, { session }) => info(await Sandbox.getInfo(args.sandboxId, session.sdk)),
  );

  defineTool(
    server,
    session,
    "kill_sandbox",
    { title: "Kill a sandbox", description: "Stop a sandbox and delete its filesystem (snapshots of it stay).", destructive: true, input: { sandboxId } },
    async (args, { session }) => {
      session.forget(args.sandboxId);
      const killed = await Sandbox.kill(args.sandboxId, session.sdk);
      if (!killed) throw new ToolError("not_found", `sandbox '${args.sandboxId}' not found`);
      return { sandboxId: args.sandboxId, killed: true };
    },
  );

  defineTool(
    server,
    session,
    "set_sandbox_timeout",
    {
      title: "Set a sandbox's lifetime",
      description: "Set how long from now the sandbox lives before it is killed.",
      input: { sandboxId, timeoutSeconds: timeoutSeconds.describe("Seconds from now") },
    },
    async (args, { session }) => {
      await Sandbox.setTimeout(args.sandboxId, args.timeoutSeconds * 1000, session.sdk);
      return { sandboxId: args.sandboxId, timeoutSeconds: args.timeoutSeconds };
    },
  );

  defineTool(
    server,
    session,
    "pause_sandbox",
    {
      title: "Pause a sandbox",
      description: "Freeze a sandbox and keep its filesystem; resume_sandbox (or any tool that uses it) resumes it.",
      input: { sandboxId },
    },
    async (args, { session }) => {
      session.forget(args.sandboxId);
      const paused = await Sandbox.pause(args.sandboxId, session.sdk);
      return { sandboxId: args.sandboxId, paused: true, alreadyPaused: !paused };
    },
  );

  defineTool(
    server,
    session,
    "resume_sandbox",
    {
      title: "Resume a sandbox",
      description: "Resume a paused sandbox (a running one is left as it is), optionally with a new lifetime.",
      input: { sandboxId, timeoutSeconds: timeoutSeconds.optional().describe("New lifetime in seconds") },
    },
    async (args, { session, signal }) => {
      session.forget(args.sandboxId);
      const sandbox = await Sandbox.connect(args.sandboxId, {
        ...session.sdk,
        signal,
        ...(args.timeoutSeconds !== undefined ? { timeoutMs: args.timeoutSeconds * 1000 } : {}),
      });
      session.remember(sandbox);
      return { sandboxId: sandbox.sandboxId, state: "running" };
    },
  );

  defineTool(
    server,
    session,
    "fork_sandbox",
    {
      title: "Fork a sandbox",
      description: "Create copies of a running sandbox's filesystem as new sandboxes; the original keeps running.",
      input: {
        sandboxId,
        count: z.number().int().min(1).max(16).default(1).describe("How many forks"),
        timeoutSeconds: timeoutSeconds.optional().describe("Lifetime of each fork"),
      },
    },
    async (args, { session }) => {
      const forks = await Sandbox.fork(args.sandboxId, {
        ...session.sdk,
        count: args.count,
        ...(args.timeoutSeconds !== undefined ? { timeoutMs: args.timeoutSeconds * 1000 } : {}),
      });
      return {
        forks: forks.map((f) => {
          if (f instanceof Error) return { error: f.message };
          session.remember(f);
          return { sandboxId: f.sandboxId };
        }),
      };
    },
  );

  defineTool(
    server,
    session,
    "snapshot_sandbox",
    {
      title: "Checkpoint a sandbox",
      description:
        "Save the sandbox's filesystem as a snapshot (a checkpoint); it keeps running. restore_snapshot starts a sandbox from it (roll back).",
      input: { sandboxId, name: z.string().min(1).max(128).optional().describe("A name for the snapshot") },
    },
    async (args, { session }) => {
      const snapshot = await Sandbox.createSnapshot(args.sandboxId, { ...session.sdk, ...(args.name ? { name: args.name } : {}) });
      return { snapshotId: snapshot.snapshotId, names: snapshot.names };
    },
  );

  defineTool(
    server,
    session,
    "list_snapshots",
    { title: "List snapshots", description: "Snapshots (checkpoints), all or of one sandbox.", readOnly: true, input: { sandboxId: sandboxId.optional() } },
    async (args, { session }) => {
      const paginator = Sandbox.listSnapshots({ ...session.sdk, ...(args.sandboxId ? { sandboxId: args.sandboxId } : {}) });
      const snapshots: Record<string, unknown>[] = [];
      while (paginator.hasNext && snapshots.length < LIST_LIMIT) {
        snapshots.push(...(await paginator.nextItems()).map((s) => ({ snapshotId: s.snapshotId, names: s.names })));
      }
      return { snapshots };
    },
  );

  defineTool(
    server,
    session,
    "restore_snapshot",
    {
      title: "Roll back to a snapshot",
      description: "Start a new sandbox from a snapshot (a checkpoint); with replaceSandboxId that sandbox is killed once the new one runs.",
      input: {
        snapshotId: z.string().min(1).max(256),
        replaceSandboxId: sandboxId.optional().describe("A sandbox to kill after the restore, e.g. the one that was checkpointed"),
        timeoutSeconds: timeoutSeconds.optional(),
      },
    },
    async (args, { session, signal, progress }) => {
      const created = await create(session, args.snapshotId, { timeoutSeconds: args.timeoutSeconds }, signal, progress);
      if (args.replaceSandboxId) {
        session.forget(args.replaceSandboxId);
        await Sandbox.kill(args.replaceSandboxId, session.sdk);
      }
      return { sandboxId: created.sandboxId, snapshotId: args.snapshotId, ...(args.replaceSandboxId ? { killed: args.replaceSandboxId } : {}) };
    },
  );
}
