// What this MCP server saw of each sandbox's processes (commands it ran, their output and exit, code it ran),
// served as the sandbox's `logs` resource. E2B's log endpoint has nothing for Burrow to report, and an agent
// mostly wants the output of what it started, including background commands whose output arrives later.
// Bounded: the newest bytes per sandbox, and a bounded number of sandboxes.
const MAX_BYTES_PER_SANDBOX = 256 * 1024;
const MAX_SANDBOXES = 256;

export class LogBook {
  private readonly logs = new Map<string, string[]>();
  private readonly sizes = new Map<string, number>();

  append(sandboxId: string, text: string): void {
    let lines = this.logs.get(sandboxId);
    if (lines) this.logs.delete(sandboxId);
    else lines = [];
    this.logs.set(sandboxId, lines);
    const stamped = `${new Date().toISOString()} ${text.endsWith("\n") ? text : `${text}\n`}`;
    lines.push(stamped);
    let size = (this.sizes.get(sandboxId) ?? 0) + stamped.length;
    while (size > MAX_BYTES_PER_SANDBOX && lines.length > 1) size -= lines.shift()!.length;
    this.sizes.set(sandboxId, size);
    for (const oldest of this.logs.keys()) {
      if (this.logs.size <= MAX_SANDBOXES) break;
      this.logs.delete(oldest);
      this.sizes.delete(oldest);
    }
  }

  read(sandboxId: string): string {
    return (this.logs.get(sandboxId) ?? []).join("");
  }

  forget(sandboxId: string): void {
    this.logs.delete(sandboxId);
    this.sizes.delete(sandboxId);
  }
}
