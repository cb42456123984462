import { defineCommand } from "../../command.js";
import { clientConnection } from "../../connection.js";
import { connectSandbox } from "./connect.js";

/** An interactive terminal into a sandbox over envd's PTY API. */
export const sandboxShell = defineCommand({
  name: "shell",
  summary: "Open an interactive terminal in a sandbox",
  args: "ID",
  minArgs: 1,
  options: { user: { type: "string", value: "USER", description: "Log in as this user (default: the template's)" } },
  async run({ values, positionals, env }) {
    const [sandboxId = ""] = positionals;
    const connection = clientConnection(env);
    const sandbox = await connectSandbox(sandboxId, connection);
    const { stdin, stdout } = process;
    const size = () => ({ cols: stdout.columns || 80, rows: stdout.rows || 24 });
    const terminal = await sandbox.pty.create({
      ...size(),
      ...(values.user ? { user: values.user } : {}),
      timeoutMs: 0,
      onData: (data: Uint8Array) => void stdout.write(data),
    });
    const onResize = () => void sandbox.pty.resize(terminal.pid, size()).catch(() => undefined);
    const onInput = (chunk: Buffer) => void sandbox.pty.sendInput(terminal.pid, new Uint8Array(chunk)).catch(() => undefined);
    if (stdin.isTTY) stdin.setRawMode(true);
    stdin.on("data", onInput);
    stdout.on("resize", onResize);
    try {
      const result = await terminal.wait().catch((error: { exitCode?: number }) => ({ exitCode: error.exitCode ?? 1 }));
      process.exitCode = result.exitCode;
    } finally {
      stdin.off("data", onInput);
      stdout.off("resize", onResize);
      if (stdin.isTTY) stdin.setRawMode(false);
      stdin.pause();
    }
  },
});
