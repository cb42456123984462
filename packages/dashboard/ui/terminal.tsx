// A real terminal: xterm.js on a PTY that envd starts (Process.Start with a pty), keystrokes sent with
// SendInput in order, the size kept in step with Update. Leaving the page kills the shell.
import { FitAddon } from "@xterm/addon-fit";
import { Terminal as XTerm } from "@xterm/xterm";
import { useEffect, useRef, useState } from "preact/hooks";
import { processPb } from "@burrow/protocol";
import type { EnvdClients } from "./envd.js";

/** Shells being killed as their terminal closes; killing the sandbox waits for them (see sandbox-page.tsx). */
export const closingShells = new Set<Promise<unknown>>();

export function Terminal({ clients }: { clients: EnvdClients }) {
  const host = useRef<HTMLDivElement>(null);
  const [status, setStatus] = useState("starting…");
  useEffect(() => {
    const term = new XTerm({ cursorBlink: true, fontSize: 13, convertEol: false, scrollback: 5000 });
    const fit = new FitAddon();
    term.loadAddon(fit);
    term.open(host.current!);
    fit.fit();
    const controller = new AbortController();
    let pid: number | undefined;
    let sending = Promise.resolve();
    const encoder = new TextEncoder();
    const send = (data: Uint8Array) => {
      if (pid === undefined) return;
      const selector = { selector: { case: "pid" as const, value: pid } };
      sending = sending
        .then(() => clients.process.sendInput({ process: selector, input: { input: { case: "pty", value: data } } }, { signal: controller.signal }))
        .then(
          () => undefined,
          (err: unknown) => {
            if (!controller.signal.aborted) setStatus(`input failed: ${String(err)}`);
          },
        );
    };
    const input = term.onData((data) => send(encoder.encode(data)));
    const binary = term.onBinary((data) => send(Uint8Array.from(data, (c) => c.charCodeAt(0))));
    const resize = term.onResize(({ cols, rows }) => {
      if (pid === undefined) return;
      clients.process
        .update({ process: { selector: { case: "pid", value: pid } }, pty: { size: { cols, rows } } }, { signal: controller.signal })
        .catch(() => undefined);
    });
    const observer = new ResizeObserver(() => fit.fit());
    observer.observe(host.current!);

    void (async () => {
      try {
        const stream = clients.process.start(
          {
            process: { cmd: "/bin/bash", args: ["-i", "-l"], envs: { TERM: "xterm-256color", LANG: "C.UTF-8" }, cwd: "/home/user" },
            pty: { size: { cols: term.cols, rows: term.rows } },
          },
          { signal: controller.signal },
        );
        for await (const { event } of stream) {
          const e = event?.event;
          if (e?.case === "start") {
            pid = e.value.pid;
            setStatus(`connected (pid ${pid}, ${term.cols}×${term.rows})`);
            term.focus();
          } else if (e?.case === "data" && e.value.output.case === "pty") {
            term.write(e.value.output.value);
          } else if (e?.case === "end") {
            setStatus(`shell ended: ${e.value.status}`);
          }
        }
      } catch (err) {
        if (!controller.signal.aborted) setStatus(`terminal failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    })();

    return () => {
      if (pid !== undefined) {
        const closing = clients.process
          .sendSignal({ process: { selector: { case: "pid", value: pid } }, signal: processPb.Signal.SIGKILL })
          .catch(() => undefined)
          .finally(() => closingShells.delete(closing));
        closingShells.add(closing);
      }
      controller.abort();
      observer.disconnect();
      input.dispose();
      binary.dispose();
      resize.dispose();
      term.dispose();
    };
  }, [clients]);
  return (
    <div class="terminal-panel">
      <div class="panel-status" id="terminal-status">{status}</div>
      <div class="terminal" id="terminal" ref={host} />
    </div>
  );
}
