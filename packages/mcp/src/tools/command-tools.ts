// Commands in a sandbox: run one and wait (its output streamed as progress notifications while it runs), start
// one in the background (its output collected in the sandbox's logs resource), list and kill processes.
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import type { BurrowSession } from "../session.js";
import { isCommandExit } from "../tool-error.js";
import { sandboxId } from "./sandbox-tools.js";
import { defineTool } from "./tool-kit.js";

/** Output kept in a result, per stream: the end of it, where errors usually are. */
const MAX_OUTPUT_CHARS = 64 * 1024;

export function tail(text: string, max = MAX_OUTPUT_CHARS): string {
  return text.length <= max ? text : `[… ${text.length - max} earlier characters cut]\n${text.slice(-max)}`;
}

export function registerCommandTools(server: McpServer, session: BurrowSession): void {
  defineTool(
    server,
    session,
    "run_command",
    {
      title: "Run a shell command",
      description:
        "Run a command with bash in a sandbox and return its exit code, stdout and stderr (a non-zero exit is a result, not an error). " +
        "Output is streamed as progress notifications while it runs. With background=true it returns the pid at once; " +
        "the output then goes to the sandbox's logs resource (burrow://sandboxes/{sandboxId}/logs).",
      input: {
        sandboxId,
        command: z.string().min(1).max(100_000).describe("Shell command line, e.g. 'ls -la /home/user'"),
        cwd: z.string().optional().describe("Working directory (default the user's home)"),
        envs: z.record(z.string(), z.string()).optional().describe("Extra environment variables"),
        user: z.enum(["user", "root"]).default("user").describe("Who runs it"),
        timeoutSeconds: z.number().int().min(1).max(3600).default(60).describe("Kill it after this long (foreground only)"),
        background: z.boolean().default(false).describe("Return at once with the pid"),
      },
    },
    async (args, { session, signal, progress }) => {
      const sandbox = await session.sandbox(args.sandboxId, signal);
      const log = (line: string) => session.logs.append(args.sandboxId, line);
      const base = { user: args.user, ...(args.cwd ? { cwd: args.cwd } : {}), ...(args.envs ? { envs: args.envs } : {}) };
      if (args.background) {
        let label = "background";
        const handle = await sandbox.commands.run(args.command, {
          ...base,
          background: true,
          timeoutMs: 0,
          onStdout: (data) => log(`[${label}] ${data}`),
          onStderr: (data) => log(`[${label}] stderr: ${data}`),
        });
        label = `pid ${handle.pid}`;
        log(`[pid ${handle.pid}] started in background: ${args.command}`);
        handle.wait().then(
          (r) => log(`[pid ${handle.pid}] exited with code ${r.exitCode}`),
          (e: unknown) => log(`[pid ${handle.pid}] ${isCommandExit(e) ? `exited with code ${e.exitCode}` : `ended: ${(e as Error).message}`}`),
        );
        return { pid: handle.pid, background: true };
      }
      log(`$ ${args.command}`);
      try {
        const result = await sandbox.commands.run(args.command, {
          ...base,
          timeoutMs: args.timeoutSeconds * 1000,
          signal,
          onStdout: (data) => progress(data),
          onStderr: (data) => progress(`stderr: ${data}`),
        } as Parameters<typeof sandbox.commands.run>[1]);
        log(`exit ${result.exitCode}${result.stdout ? `\n${tail(result.stdout, 4096)}` : ""}`);
        return { exitCode: result.exitCode, stdout: tail(result.stdout), stderr: tail(result.stderr) };
      } catch (error) {
        if (!isCommandExit(error)) {
          session.forget(args.sandboxId);
          throw error;
        }
        log(`exit ${error.exitCode}${error.stderr ? `\n${tail(error.stderr, 4096)}` : ""}`);
        // envd's "exit status N" says nothing more than exitCode; anything else (a signal, an OOM kill) is kept.
        const why = error.error && error.error !== `exit status ${error.exitCode}` ? { error: error.error } : {};
        return { exitCode: error.exitCode, stdout: tail(error.stdout), stderr: tail(error.stderr), ...why };
      }
    },
  );

  defineTool(
    server,
    session,
    "list_processes",
    { title: "List processes", description: "Processes started through envd (commands, background commands) in a sandbox.", readOnly: true, input: { sandboxId } },
    async (args, { session, signal }) => {
      const sandbox = await session.sandbox(args.sandboxId, signal);
      const processes = await sandbox.commands.list();
      return { processes: processes.map((p) => ({ pid: p.pid, cmd: p.cmd, args: p.args, ...(p.cwd ? { cwd: p.cwd } : {}), ...(p.tag ? { tag: p.tag } : {}) })) };
    },
  );

  defineTool(
    server,
    session,
    "kill_process",
    { title: "Kill a process", description: "Kill a process (SIGKILL) in a sandbox by pid.", destructive: true, input: { sandboxId, pid: z.number().int().min(1) } },
    async (args, { session, signal }) => {
      const sandbox = await session.sandbox(args.sandboxId, signal);
      const killed = await sandbox.commands.kill(args.pid);
      return { pid: args.pid, killed };
    },
  );
}
