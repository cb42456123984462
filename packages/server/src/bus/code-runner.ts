// Code as a trigger or task target: the code goes to the sandbox's execution server (the one the official
// @e2b/code-interpreter SDK talks to), in the language's default context so state carries from run to run as in a
// notebook, or in a context of its own when the run names a working directory. What the run produces is published
// on `sbx.<template>.<sandbox>.code.<type>`: started, stdout and stderr (merged and bounded like process output),
// one result per result, error when the code raised, and always end. Every code event is durable, so a trigger or
// an agent reading the event stream later sees the run whole.
import { publishSandboxEvent, type Bus, type CodeEvent, type CodeExecution, type RunResult } from "@burrow/bus";
import { BurrowError, Code } from "@burrow/protocol";
import type { Logger } from "pino";
import type { SandboxRow } from "../store/sandboxes.js";
import { createContext, execute, removeContext, type ExecutionLine, type ExecutionTarget } from "./execution-client.js";
import { OutputEventThrottle, type OutputEventLimits } from "./output-event-throttle.js";
import { OutputTail } from "./output-tail.js";

/** Largest result kept whole in an event or a task's result; bigger formats (images, mostly) are left out and named. */
export const MAX_RESULT_BYTES = 256 * 1024;
/** Results kept in a task's result, all together. */
const MAX_RESULTS_BYTES = 1024 * 1024;
/** How long past the run's own limit the server waits for the execution server to report it (interrupt, restart). */
const TIMEOUT_GRACE_MS = 10_000;

export interface CodeRunDeps {
  bus?: Bus | undefined;
  logger: Logger;
  outputLimits: OutputEventLimits;
  maxOutputBytes: number;
}

export interface CodeRun {
  code: string;
  /** Normalised language. */
  language: string;
  runId: string;
  envVars?: Record<string, string> | undefined;
  /** A context of its own in this directory (removed afterwards) instead of the language's default context. */
  cwd?: string | undefined;
  /** 0: none. */
  timeoutMs: number;
  signal?: AbortSignal | undefined;
}

/**
 * A result within `budget` bytes of JSON: formats are left out largest first (never `is_main_result`) and named in
 * `omitted`; a text that alone is too large is cut.
 */
export function boundedResult(result: Record<string, unknown>, budget: number): { result: Record<string, unknown>; omitted: string[] } {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(result)) if (key !== "type") out[key] = value;
  const omitted: string[] = [];
  const size = () => Buffer.byteLength(JSON.stringify(out));
  const formats = Object.keys(out)
    .filter((key) => key !== "is_main_result")
    .sort((a, b) => JSON.stringify(out[b] ?? null).length - JSON.stringify(out[a] ?? null).length);
  for (const key of formats) {
    if (size() <= budget) break;
    if (key === "text" && typeof out.text === "string") continue;
    delete out[key];
    omitted.push(key);
  }
  if (size() > budget && typeof out.text === "string") {
    out.text = `${out.text.slice(0, Math.max(0, budget - 1024))}\n[burrow: result text cut to fit the event]`;
  }
  return { result: out, omitted };
}

function str(value: unknown): string {
  return typeof value === "string" ? value : value === undefined || value === null ? "" : String(value);
}

/** Runs the code through the execution server at `target` and publishes its events; resolves with the run's outcome. */
export async function runCodeInSandbox(deps: CodeRunDeps, row: SandboxRow, target: ExecutionTarget, run: CodeRun): Promise<Omit<RunResult, "sandboxId">> {
  const stdout = new OutputTail(deps.maxOutputBytes);
  const stderr = new OutputTail(deps.maxOutputBytes);
  const execution: CodeExecution = { results: [] };
  let resultBytes = 0;
  const base = { sandboxId: row.sandboxId, templateId: row.templateId, metadata: row.metadata, category: "code" as const, runId: run.runId };
  const publish = (e: Omit<CodeEvent, keyof typeof base>) => {
    if (!deps.bus) return Promise.resolve();
    return publishSandboxEvent(deps.bus, { ...base, ...e }).then(
      () => undefined,
      (err: unknown) => deps.logger.warn({ err, sandboxId: row.sandboxId, runId: run.runId }, "could not publish a code event"),
    );
  };
  const output = deps.bus
    ? new OutputEventThrottle(deps.outputLimits, async (chunks) => {
      for (const c of chunks) {
        await publish({ type: c.stream === "stderr" ? "stderr" : "stdout", text: c.data.toString("utf8"), ...(c.droppedBytes > 0 ? { droppedBytes: c.droppedBytes } : {}) });
      }
    })
    : undefined;
  const limit = run.timeoutMs > 0 ? AbortSignal.timeout(run.timeoutMs + TIMEOUT_GRACE_MS) : undefined;
  const signal = limit && run.signal ? AbortSignal.any([limit, run.signal]) : (limit ?? run.signal);
  await publish({ type: "started", language: run.language });
  let contextId: string | undefined;
  let ended = false;
  try {
    if (run.cwd !== undefined) contextId = await createContext(row.sandboxId, target, { language: run.language, cwd: run.cwd, signal });
    for await (const line of execute(row.sandboxId, target, {
      code: run.code,
      ...(contextId !== undefined ? { contextId } : { language: run.language }),
      envVars: run.envVars,
      timeoutMs: run.timeoutMs,
      signal,
    })) {
      if (await handleLine(line)) ended = true;
    }
    if (!ended) throw new BurrowError(Code.Unavailable, `the execution server of sandbox "${row.sandboxId}" ended the stream before the run finished`);
    await output?.flush();
    await publish({ type: "end", ok: execution.error === undefined, ...(execution.executionCount !== undefined ? { executionCount: execution.executionCount } : {}) });
    return { exitCode: execution.error ? 1 : 0, stdout: stdout.text(), stderr: stderr.text(), execution };
  } catch (err) {
    const failure =
      limit?.aborted && !run.signal?.aborted
        ? new BurrowError(Code.DeadlineExceeded, `code run timed out after ${run.timeoutMs} ms`, { cause: err })
        : BurrowError.from(err, Code.Internal);
    await output?.flush();
    await publish({ type: "end", ok: false, error: failure.message });
    throw failure;
  } finally {
    if (contextId !== undefined) {
      await removeContext(row.sandboxId, target, contextId).catch((err: unknown) =>
        deps.logger.warn({ err, sandboxId: row.sandboxId, contextId }, "could not remove a code run's context"),
      );
    }
  }

  /** Records and publishes one line; true for the line that ends the run. */
  async function handleLine(line: ExecutionLine): Promise<boolean> {
    switch (line.type) {
      case "stdout":
      case "stderr": {
        const data = Buffer.from(str(line.text), "utf8");
        (line.type === "stderr" ? stderr : stdout).push(data);
        output?.push(line.type, data);
        return false;
      }
      case "number_of_executions":
        if (typeof line.execution_count === "number") execution.executionCount = line.execution_count;
        return false;
      case "result": {
        const event = boundedResult(line, MAX_RESULT_BYTES);
        const kept = boundedResult(event.result, Math.max(1024, Math.min(MAX_RESULT_BYTES, MAX_RESULTS_BYTES - resultBytes)));
        const omitted = [...event.omitted, ...kept.omitted];
        resultBytes += Buffer.byteLength(JSON.stringify(kept.result));
        execution.results.push({ ...kept.result, ...(omitted.length > 0 ? { omitted } : {}) });
        await output?.flush();
        await publish({ type: "result", result: event.result, ...(event.omitted.length > 0 ? { omitted: event.omitted } : {}) });
        return false;
      }
      case "error": {
        execution.error = { name: str(line.name), value: str(line.value), traceback: str(line.traceback) };
        await output?.flush();
        await publish({ type: "error", ...execution.error });
        return false;
      }
      case "end_of_execution":
        return true;
      default:
        // keepalive, and anything a newer server adds.
        return false;
    }
  }
}
