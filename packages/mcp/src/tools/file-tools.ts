// Files in a sandbox: read (text, or base64 for binary content), write, list a directory, and watch a directory
// for a while (each change also sent as a progress notification).
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { EntryInfo, FilesystemEvent, Sandbox } from "e2b";
import { z } from "zod";
import type { BurrowSession } from "../session.js";
import { ToolError } from "../tool-error.js";
import { sandboxId } from "./sandbox-tools.js";
import { defineTool } from "./tool-kit.js";

export const MAX_READ_BYTES = 4 * 1024 * 1024;
const MAX_WATCH_EVENTS = 1000;

const path = z.string().min(1).max(4096).describe("Absolute path, or relative to the user's home");
const user = z.enum(["user", "root"]).default("user").describe("Whose permissions apply");

/** Text when the bytes are UTF-8, base64 otherwise. */
export function decodeContent(bytes: Uint8Array): { encoding: "utf8" | "base64"; content: string } {
  try {
    return { encoding: "utf8", content: new TextDecoder("utf-8", { fatal: true }).decode(bytes) };
  } catch {
    return { encoding: "base64", content: Buffer.from(bytes).toString("base64") };
  }
}

export async function readSandboxFile(sandbox: Sandbox, filePath: string, asUser: "user" | "root"): Promise<Uint8Array> {
  const info = await sandbox.files.getInfo(filePath, { user: asUser });
  if (info.type === "dir") throw new ToolError("invalid_argument", `'${filePath}' is a directory: use list_files`);
  if (info.size > MAX_READ_BYTES) {
    throw new ToolError("resource_exhausted", `'${filePath}' is ${info.size} bytes, more than the ${MAX_READ_BYTES} a read returns: use run_command (head, tail, grep)`);
  }
  return sandbox.files.read(filePath, { format: "bytes", user: asUser });
}

function entry(e: EntryInfo): Record<string, unknown> {
  return {
    name: e.name,
    path: e.path,
    type: e.type,
    size: e.size,
    permissions: e.permissions,
    owner: e.owner,
    ...(e.modifiedTime ? { modifiedTime: e.modifiedTime.toISOString() } : {}),
    ...(e.symlinkTarget ? { symlinkTarget: e.symlinkTarget } : {}),
  };
}

export function registerFileTools(server: McpServer, session: BurrowSession): void {
  defineTool(
    server,
    session,
    "read_file",
    {
      title: "Read a file",
      description: `Read a file from a sandbox (up to ${MAX_READ_BYTES / 1024 / 1024} MiB): its text, or base64 when it is not UTF-8.`,
      readOnly: true,
      input: { sandboxId, path, user },
    },
    async (args, { session, signal }) => {
      const sandbox = await session.sandbox(args.sandboxId, signal);
      const bytes = await readSandboxFile(sandbox, args.path, args.user);
      const { encoding, content } = decodeContent(bytes);
      return {
        content: [{ type: "text", text: content }],
        structured: { path: args.path, size: bytes.byteLength, encoding, content },
      };
    },
  );

  defineTool(
    server,
    session,
    "write_file",
    {
      title: "Write a file",
      description: "Create or replace a file in a sandbox (parent directories are created).",
      input: {
        sandboxId,
        path,
        content: z.string().max(16 * 1024 * 1024).describe("The file's content"),
        encoding: z.enum(["utf8", "base64"]).default("utf8").describe("How content is encoded"),
        user,
      },
    },
    async (args, { session, signal }) => {
      const sandbox = await session.sandbox(args.sandboxId, signal);
      const data = args.encoding === "base64" ? Buffer.from(args.content, "base64") : Buffer.from(args.content, "utf8");
      const written = await sandbox.files.write(args.path, data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) as ArrayBuffer, { user: args.user });
      return { path: written.path, size: data.byteLength };
    },
  );

  defineTool(
    server,
    session,
    "list_files",
    {
      title: "List a directory",
      description: "List a directory in a sandbox: names, types, sizes, permissions and owners.",
      readOnly: true,
      input: { sandboxId, path, depth: z.number().int().min(1).max(10).default(1).describe("How deep to list"), user },
    },
    async (args, { session, signal }) => {
      const sandbox = await session.sandbox(args.sandboxId, signal);
      const entries = await sandbox.files.list(args.path, { depth: args.depth, user: args.user });
      return { path: args.path, entries: entries.map(entry) };
    },
  );

  defineTool(
    server,
    session,
    "watch_files",
    {
      title: "Watch a directory",
      description:
        "Watch a directory in a sandbox for a while and return the changes (create, write, remove, rename, chmod); each change is also " +
        "sent as a progress notification as it happens.",
      readOnly: true,
      input: {
        sandboxId,
        path,
        durationSeconds: z.number().min(0.1).max(300).default(10).describe("How long to watch"),
        recursive: z.boolean().default(false),
        maxEvents: z.number().int().min(1).max(MAX_WATCH_EVENTS).default(100).describe("Stop after this many changes"),
        user,
      },
    },
    async (args, { session, signal, progress }) => {
      const sandbox = await session.sandbox(args.sandboxId, signal);
      const events: { name: string; type: string }[] = [];
      let done: () => void = () => undefined;
      const finished = new Promise<void>((resolve) => (done = resolve));
      const watcher = await sandbox.files.watchDir(
        args.path,
        (e: FilesystemEvent) => {
          if (events.length >= args.maxEvents) return;
          events.push({ name: e.name, type: e.type });
          void progress(`${e.type} ${e.name}`);
          if (events.length >= args.maxEvents) done();
        },
        { recursive: args.recursive, timeoutMs: 0, user: args.user, onExit: () => done() },
      );
      const timer = setTimeout(done, args.durationSeconds * 1000);
      signal.addEventListener("abort", done, { once: true });
      try {
        await finished;
      } finally {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        await watcher.stop();
      }
      return { path: args.path, events, truncated: events.length >= args.maxEvents };
    },
  );
}
