// Messages between the server and a JavaScript context's worker process (Node IPC channel).

export type HostMessage =
  | { t: "run"; id: number; code: string; filename: string; silent: boolean }
  | { t: "env"; id: number; op: "set" | "push" | "pop"; vars?: Record<string, string> };

export type WorkerMessage =
  | { t: "ready" }
  | { t: "out"; id: number; name: "stdout" | "stderr"; text: string }
  | { t: "result"; id: number; data: Record<string, unknown> }
  | { t: "error"; id: number; name: string; value: string; traceback: string }
  | { t: "done"; id: number };
