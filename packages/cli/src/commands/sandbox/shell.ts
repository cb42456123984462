import { parseArgs } from "node:util";
import { Sandbox } from "e2b";
import { CliError } from "../../cli-error.js";
import type { Connection } from "../../connection.js";

/** An interactive terminal into a sandbox over envd's PTY API. */
export async function sandboxShell(argv: string[], connection: Connection): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { user: { type: "string" } },
  });
  const [sandboxId] = positionals;
  if (!sandboxId) throw new CliError("usage: burrow sandbox shell ID", 2);
  const sandbox = await Sandbox.connect(sandboxId, connection);
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
}
