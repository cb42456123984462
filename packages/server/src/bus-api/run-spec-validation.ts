// Strict checks of trigger rules and task specs as JSON (no coercion, no unknown fields): a bad rule is a 400 with
// the field named, never a rule that silently does something else.
import { type CodeSpec, type ProcessSettings, type RunTarget, type SandboxEventFilter, type TerminalSettings } from "@burrow/bus";
import { BurrowError, Code } from "@burrow/protocol";
import { CODE_LANGUAGES, normalizeCodeLanguage } from "../bus/execution-client.js";
import type { FileInput, ServerRunExtensions } from "../bus/sandbox-runner.js";
import type { TaskInput, TriggerRuleInput } from "../bus/trigger-service.js";

type Obj = Record<string, unknown>;

const EVENT_TYPES: Record<string, readonly string[]> = {
  lifecycle: ["created", "paused", "resumed", "snapshotted", "forked", "timed_out", "killed", "pause_converted",
    "lost", "recovered", "moved", "checkpoint_created", "rolled_back", "checkpoint_deleted"],
  proc: ["started", "output", "exited"],
  fs: ["create", "write", "remove", "rename", "chmod"],
  code: ["started", "stdout", "stderr", "result", "error", "end"],
};

function bad(message: string): never {
  throw new BurrowError(Code.InvalidArgument, message);
}

function obj(v: unknown, at: string, allowed: readonly string[]): Obj {
  if (typeof v !== "object" || v === null || Array.isArray(v)) bad(`${at} must be an object`);
  for (const k of Object.keys(v)) if (!allowed.includes(k)) bad(`${at}.${k} is not a known field`);
  return v as Obj;
}

function str(v: unknown, at: string, o: { max?: number; pattern?: RegExp; absolute?: boolean } = {}): string {
  if (typeof v !== "string" || v.length === 0) bad(`${at} must be a non-empty string`);
  if (v.length > (o.max ?? 4096)) bad(`${at} is longer than ${o.max ?? 4096} characters`);
  if (o.pattern && !o.pattern.test(v)) bad(`${at} must match ${o.pattern}`);
  if (o.absolute && !v.startsWith("/")) bad(`${at} must be an absolute path`);
  return v;
}

function int(v: unknown, at: string, min: number, max: number): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) bad(`${at} must be an integer from ${min} to ${max}`);
  return v;
}

function bool(v: unknown, at: string): boolean {
  if (typeof v !== "boolean") bad(`${at} must be a boolean`);
  return v;
}

function strMap(v: unknown, at: string): Record<string, string> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) bad(`${at} must be an object of strings`);
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v)) {
    if (typeof x !== "string") bad(`${at}.${k} must be a string`);
    out[k] = x;
  }
  return out;
}

const ID = /^[A-Za-z0-9_-]{1,48}$/;

export function parseFilter(v: unknown, at: string): SandboxEventFilter {
  const o = obj(v, at, ["sandboxId", "templateId", "category", "type", "metadata", "pathPrefix"]);
  if (Object.keys(o).length === 0) bad(`${at} must name at least one of sandboxId, templateId, category, type, metadata, pathPrefix`);
  const f: SandboxEventFilter = {};
  if (o.sandboxId !== undefined) f.sandboxId = str(o.sandboxId, `${at}.sandboxId`, { max: 128 });
  if (o.templateId !== undefined) f.templateId = str(o.templateId, `${at}.templateId`, { max: 128 });
  if (o.category !== undefined) {
    const c = str(o.category, `${at}.category`);
    if (!(c in EVENT_TYPES)) bad(`${at}.category must be one of ${Object.keys(EVENT_TYPES).join(", ")}`);
    f.category = c as SandboxEventFilter["category"] & string;
  }
  if (o.type !== undefined) {
    const t = str(o.type, `${at}.type`, { max: 64 });
    const known = f.category ? EVENT_TYPES[f.category]! : Object.values(EVENT_TYPES).flat();
    if (!known.includes(t)) bad(`${at}.type must be one of ${known.join(", ")}`);
    f.type = t;
  }
  if (o.metadata !== undefined) f.metadata = strMap(o.metadata, `${at}.metadata`);
  if (o.pathPrefix !== undefined) {
    if (f.category !== undefined && f.category !== "fs") bad(`${at}.pathPrefix applies to fs events only`);
    f.pathPrefix = str(o.pathPrefix, `${at}.pathPrefix`, { absolute: true });
  }
  return f;
}

function parseTarget(v: unknown, at: string): RunTarget {
  const o = obj(v, at, ["sandboxId", "template"]);
  if ((o.sandboxId === undefined) === (o.template === undefined)) bad(`${at} must have exactly one of sandboxId and template`);
  return o.sandboxId !== undefined ? { sandboxId: str(o.sandboxId, `${at}.sandboxId`, { max: 128 }) } : { template: str(o.template, `${at}.template`, { max: 256 }) };
}

function parseCode(v: unknown, at: string): CodeSpec {
  const o = obj(v, at, ["language", "code"]);
  const c = { language: str(o.language, `${at}.language`, { max: 32 }), code: str(o.code, `${at}.code`, { max: 100_000 }) };
  if (normalizeCodeLanguage(c.language) === undefined) bad(`${at}.language "${c.language}" is not supported (${CODE_LANGUAGES.join(", ")})`);
  return c;
}

function parseProcess(v: unknown, at: string): ProcessSettings {
  const o = obj(v, at, ["env", "cwd", "user", "timeoutMs"]);
  return {
    ...(o.env !== undefined ? { env: strMap(o.env, `${at}.env`) } : {}),
    ...(o.cwd !== undefined ? { cwd: str(o.cwd, `${at}.cwd`) } : {}),
    ...(o.user !== undefined ? { user: str(o.user, `${at}.user`, { max: 64, pattern: /^[a-z_][a-z0-9_-]*$/ }) } : {}),
    ...(o.timeoutMs !== undefined ? { timeoutMs: int(o.timeoutMs, `${at}.timeoutMs`, 0, 86_400_000) } : {}),
  };
}

function parseTerminal(v: unknown, at: string): TerminalSettings {
  const o = obj(v, at, ["pty", "cols", "rows"]);
  return {
    pty: bool(o.pty, `${at}.pty`),
    ...(o.cols !== undefined ? { cols: int(o.cols, `${at}.cols`, 1, 1000) } : {}),
    ...(o.rows !== undefined ? { rows: int(o.rows, `${at}.rows`, 1, 1000) } : {}),
  };
}

function parseInputs(v: unknown, at: string, defaultSandbox: string | undefined): FileInput[] {
  if (!Array.isArray(v) || v.length > 16) bad(`${at} must be an array of at most 16 inputs`);
  return v.map((x, i) => {
    const o = obj(x, `${at}[${i}]`, ["sandboxId", "path", "to"]);
    const sandboxId = o.sandboxId !== undefined ? str(o.sandboxId, `${at}[${i}].sandboxId`, { max: 128 }) : defaultSandbox;
    if (!sandboxId) bad(`${at}[${i}].sandboxId is required (the rule's on.sandboxId is the default)`);
    return {
      sandboxId,
      path: str(o.path, `${at}[${i}].path`, { absolute: true }),
      ...(o.to !== undefined ? { to: str(o.to, `${at}[${i}].to`, { absolute: true }) } : {}),
    };
  });
}

const RUN_FIELDS = ["cmd", "code", "process", "terminal", "category", "priority", "maxAttempts", "keepSandbox", "outputEvents", "inputs"] as const;

function parseRun(o: Obj, defaultInputSandbox: string | undefined) {
  if ((o.cmd === undefined) === (o.code === undefined)) bad("exactly one of cmd and code is required");
  // Code runs in the execution server's kernels and always publishes code events: these would silently do nothing.
  if (o.code !== undefined) {
    if (o.terminal !== undefined) bad("terminal applies to cmd only");
    if (o.outputEvents !== undefined) bad("outputEvents applies to cmd only: code runs always publish code.* events");
    if (typeof o.process === "object" && o.process !== null && "user" in o.process) bad("process.user applies to cmd only: code runs as the execution server's user");
  }
  const ext: ServerRunExtensions = {
    ...(o.keepSandbox !== undefined ? { keepSandbox: bool(o.keepSandbox, "keepSandbox") } : {}),
    ...(o.outputEvents !== undefined ? { outputEvents: bool(o.outputEvents, "outputEvents") } : {}),
    ...(o.inputs !== undefined ? { inputs: parseInputs(o.inputs, "inputs", defaultInputSandbox) } : {}),
  };
  return {
    ...(o.cmd !== undefined ? { cmd: str(o.cmd, "cmd", { max: 100_000 }) } : {}),
    ...(o.code !== undefined ? { code: parseCode(o.code, "code") } : {}),
    ...(o.process !== undefined ? { process: parseProcess(o.process, "process") } : {}),
    ...(o.terminal !== undefined ? { terminal: parseTerminal(o.terminal, "terminal") } : {}),
    ...(o.category !== undefined ? { category: str(o.category, "category", { max: 128 }) } : {}),
    ...(o.priority !== undefined ? { priority: int(o.priority, "priority", 0, 9) } : {}),
    ...(o.maxAttempts !== undefined ? { maxAttempts: int(o.maxAttempts, "maxAttempts", 1, 10) } : {}),
    ...ext,
  };
}

export function parseTriggerRule(body: unknown): TriggerRuleInput {
  const o = obj(body, "body", ["id", "on", "in", ...RUN_FIELDS]);
  const on = parseFilter(o.on, "on");
  if (o.in === undefined) bad(`in is required: "source", {sandboxId} or {template}`);
  const target = o.in === "source" ? "source" : parseTarget(o.in, "in");
  return {
    ...(o.id !== undefined ? { id: str(o.id, "id", { pattern: ID }) } : {}),
    on,
    in: target,
    ...parseRun(o, on.sandboxId),
  };
}

export function parseTaskSpec(body: unknown): TaskInput {
  const o = obj(body, "body", ["id", "target", "labels", ...RUN_FIELDS]);
  if (o.target === undefined) bad("target is required: {sandboxId} or {template}");
  return {
    ...(o.id !== undefined ? { id: str(o.id, "id", { max: 200, pattern: /^[A-Za-z0-9_.:-]+$/ }) } : {}),
    target: parseTarget(o.target, "target"),
    ...(o.labels !== undefined ? { labels: strMap(o.labels, "labels") } : {}),
    ...parseRun(o, undefined),
  };
}

/** Sandboxes a rule or task names directly, to answer 404 at once when one is unknown. */
export function namedSandboxes(x: { in?: "source" | RunTarget; target?: RunTarget; inputs?: FileInput[] }): string[] {
  const ids: string[] = [];
  const t = x.target ?? (x.in !== "source" ? x.in : undefined);
  if (t && "sandboxId" in t) ids.push(t.sandboxId);
  for (const i of x.inputs ?? []) ids.push(i.sandboxId);
  return ids;
}
