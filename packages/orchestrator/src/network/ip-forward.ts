// Sandboxes with internet access need the host to route. ip_forward is host-wide, so setup remembers the
// value it found and teardown puts it back. With a state file the remembered value survives a restart of
// the orchestrator; without one, a restarted orchestrator would take its own "1" for the original.
import { readFile, rm, writeFile } from "node:fs/promises";

const IP_FORWARD = "/proc/sys/net/ipv4/ip_forward";

interface ForwardState {
  ipForwardBefore: string;
}

export async function readIpForward(): Promise<string> {
  return (await readFile(IP_FORWARD, "utf8")).trim();
}

/** Turn forwarding on; returns the value to restore later (from the state file when it has one). */
export async function enableIpForward(stateFile: string | undefined): Promise<string> {
  let before = await readIpForward();
  if (stateFile !== undefined) {
    const saved = await readState(stateFile);
    if (saved !== undefined) before = saved.ipForwardBefore;
    else await writeFile(stateFile, `${JSON.stringify({ ipForwardBefore: before } satisfies ForwardState)}\n`);
  }
  if ((await readIpForward()) !== "1") await writeFile(IP_FORWARD, "1\n");
  return before;
}

/** Put back the value from before setup: `before` when this process ran setup, else the state file's. */
export async function restoreIpForward(before: string | undefined, stateFile: string | undefined): Promise<void> {
  const value = before ?? (stateFile !== undefined ? (await readState(stateFile))?.ipForwardBefore : undefined);
  if (value !== undefined && (await readIpForward()) !== value) await writeFile(IP_FORWARD, `${value}\n`);
  if (stateFile !== undefined) await rm(stateFile, { force: true });
}

async function readState(path: string): Promise<ForwardState | undefined> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
  const parsed = JSON.parse(text) as Partial<ForwardState>;
  return parsed.ipForwardBefore === "0" || parsed.ipForwardBefore === "1"
    ? { ipForwardBefore: parsed.ipForwardBefore }
    : undefined;
}
