// Dockerfiles become the same step list the SDK sends: FROM picks the base, RUN/COPY/ADD/ENV/WORKDIR/USER/ARG
// become steps, CMD/ENTRYPOINT the start command. Anything that would need a Docker engine (multi-stage
// builds, remote ADD, SHELL, HEALTHCHECK, ONBUILD) is an error naming its line, never silently dropped.
import { BurrowError, Code } from "@burrow/protocol";
import type { StepType } from "../builder/build-spec.js";

/** A Dockerfile Burrow cannot build (InvalidArgument, reason dockerfile_invalid); `line` is 1-based. */
export class DockerfileError extends BurrowError {
  override name = "DockerfileError";
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(Code.InvalidArgument, `Dockerfile line ${line}: ${message}`, { reason: "dockerfile_invalid", details: { line } });
  }
}

/** A step without a files hash: COPY args are `[src, dest, owner, mode]`, as the SDK's `copy()` produces. */
export interface DockerfileStep {
  type: StepType;
  args: string[];
  line: number;
}

export interface ParsedDockerfile {
  /** The FROM image (ARGs declared before FROM expanded). */
  from: string;
  steps: DockerfileStep[];
  startCmd?: string | undefined;
  /** True when no USER / WORKDIR was set: E2B then ends with `user` in /home/user. */
  userChanged: boolean;
  workdirChanged: boolean;
}

/** Metadata-only instructions with no effect on a sandbox's filesystem. */
const IGNORED = new Set(["EXPOSE", "LABEL", "MAINTAINER", "STOPSIGNAL", "VOLUME"]);

interface Instruction {
  keyword: string;
  rest: string;
  line: number;
}

export function parseDockerfile(text: string): ParsedDockerfile {
  const instructions = splitInstructions(text);
  const preFromArgs: Record<string, string> = {};
  let from: string | undefined;
  const steps: DockerfileStep[] = [];
  let entrypoint: string | undefined;
  let cmd: string | undefined;
  let userChanged = false;
  let workdirChanged = false;
  for (const ins of instructions) {
    const { keyword, rest, line } = ins;
    if (from === undefined && keyword !== "FROM" && keyword !== "ARG") {
      throw new DockerfileError(line, `${keyword} before FROM`);
    }
    switch (keyword) {
      case "FROM": {
        if (from !== undefined) throw new DockerfileError(line, "multi-stage builds (a second FROM) are not supported");
        const words = rest.split(/\s+/).filter((w) => !w.startsWith("--platform="));
        const image = words[0];
        if (!image) throw new DockerfileError(line, "FROM needs an image");
        if (words.length > 1 && (words[1] ?? "").toUpperCase() !== "AS") throw new DockerfileError(line, `unexpected '${words[1]}' after the image`);
        from = image.replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g, (_m, name: string) => preFromArgs[name] ?? "");
        if (from === "scratch") throw new DockerfileError(line, "FROM scratch is not supported: start from debian:<suite>, a template or a local OCI image");
        break;
      }
      case "RUN":
        if (/^--/.test(rest)) throw new DockerfileError(line, `RUN flags are not supported (${rest.split(/\s/)[0]})`);
        if (/<<-?["']?[A-Za-z_]/.test(rest)) {
          throw new DockerfileError(line, "heredocs are not supported");
        }
        steps.push({ type: "RUN", args: [shellForm(rest, line)], line });
        break;
      case "COPY":
      case "ADD":
        steps.push(...copySteps(keyword, rest, line));
        break;
      case "ENV":
        steps.push({ type: "ENV", args: keyValues(rest, line, false), line });
        break;
      case "ARG": {
        const args = keyValues(rest, line, true);
        if (from === undefined) {
          for (let i = 0; i + 1 < args.length; i += 2) preFromArgs[args[i] as string] = args[i + 1] as string;
        } else steps.push({ type: "ARG", args, line });
        break;
      }
      case "WORKDIR":
        if (rest === "") throw new DockerfileError(line, "WORKDIR needs a path");
        steps.push({ type: "WORKDIR", args: [unquote(rest)], line });
        workdirChanged = true;
        break;
      case "USER":
        if (rest === "") throw new DockerfileError(line, "USER needs a user");
        steps.push({ type: "USER", args: [rest.trim()], line });
        userChanged = true;
        break;
      case "CMD":
        cmd = shellForm(rest, line);
        break;
      case "ENTRYPOINT":
        entrypoint = shellForm(rest, line);
        break;
      default:
        if (IGNORED.has(keyword)) break;
        throw new DockerfileError(line, `unsupported instruction ${keyword}`);
    }
  }
  if (from === undefined) throw new DockerfileError(1, "no FROM instruction");
  const startCmd = entrypoint !== undefined ? [entrypoint, cmd].filter(Boolean).join(" ") : cmd;
  return { from, steps, startCmd, userChanged, workdirChanged };
}

/** Join continuation lines, drop comments and blank lines, keep the line each instruction starts on. */
function splitInstructions(text: string): Instruction[] {
  const out: Instruction[] = [];
  const lines = text.split(/\r?\n/);
  let buffer = "";
  let start = 0;
  for (const [index, raw] of lines.entries()) {
    const trimmed = raw.trim();
    if (buffer === "" && (trimmed === "" || trimmed.startsWith("#"))) continue;
    if (buffer !== "" && trimmed.startsWith("#")) continue;
    if (buffer === "") start = index + 1;
    if (trimmed.endsWith("\\")) {
      buffer += `${trimmed.slice(0, -1)} `;
      continue;
    }
    buffer += trimmed;
    const m = /^(\S+)\s*(.*)$/s.exec(buffer);
    if (m) out.push({ keyword: (m[1] as string).toUpperCase(), rest: (m[2] as string).trim(), line: start });
    buffer = "";
  }
  if (buffer.trim() !== "") {
    const m = /^(\S+)\s*(.*)$/s.exec(buffer.trim());
    if (m) out.push({ keyword: (m[1] as string).toUpperCase(), rest: (m[2] as string).trim(), line: start });
  }
  return out;
}

/** Exec form (`["a","b"]`) becomes a quoted shell command line; shell form is kept. */
function shellForm(rest: string, line: number): string {
  if (!rest.startsWith("[")) {
    if (rest === "") throw new DockerfileError(line, "missing command");
    return rest;
  }
  let argv: unknown;
  try {
    argv = JSON.parse(rest);
  } catch {
    return rest; // Docker treats invalid JSON as shell form too.
  }
  if (!Array.isArray(argv) || !argv.every((a) => typeof a === "string") || argv.length === 0) {
    throw new DockerfileError(line, "exec form must be a non-empty JSON array of strings");
  }
  return (argv as string[]).map(quote).join(" ");
}

function copySteps(keyword: string, rest: string, line: number): DockerfileStep[] {
  let owner = "";
  let mode = "";
  const words = rest.startsWith("[") ? jsonWords(rest, line) : splitWords(rest);
  const operands: string[] = [];
  for (const word of words) {
    if (operands.length === 0 && word.startsWith("--")) {
      const [flag, value = ""] = word.slice(2).split("=", 2);
      if (flag === "chown") owner = value;
      else if (flag === "chmod") {
        if (!/^[0-7]{3,4}$/.test(value)) throw new DockerfileError(line, `--chmod must be octal, got '${value}'`);
        mode = value.padStart(4, "0");
      } else if (flag === "from") throw new DockerfileError(line, `${keyword} --from needs multi-stage builds, which are not supported`);
      else if (flag !== "link") throw new DockerfileError(line, `${keyword} flag --${flag} is not supported`);
      continue;
    }
    operands.push(word);
  }
  if (operands.length < 2) throw new DockerfileError(line, `${keyword} needs at least one source and a destination`);
  const dest = operands.pop() as string;
  return operands.map((src) => {
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(src)) throw new DockerfileError(line, `${keyword} of a URL is not supported (only local files)`);
    if (src.startsWith("/") || src.split("/").includes("..")) throw new DockerfileError(line, `${keyword} source '${src}' must be inside the build context`);
    if (keyword === "ADD" && /\.(tar|tar\.gz|tgz|tar\.xz|tar\.bz2)$/.test(src)) {
      throw new DockerfileError(line, "ADD of a local archive (auto-extraction) is not supported; use COPY and RUN tar");
    }
    // A destination that names several sources is a directory.
    const target = operands.length > 1 && !dest.endsWith("/") ? `${dest}/` : dest;
    return { type: "COPY" as const, args: [src, target, owner, mode], line };
  });
}

/** `ENV K=V K2="v 2"` or legacy `ENV K V`; `ARG K[=V]`. */
function keyValues(rest: string, line: number, isArg: boolean): string[] {
  const words = splitWords(rest);
  if (words.length === 0) throw new DockerfileError(line, "missing key");
  const first = words[0] as string;
  if (!isArg && !first.includes("=")) {
    // Legacy form: everything after the key is the value.
    const value = rest.slice(rest.indexOf(first) + first.length).trim();
    return [first, unquote(value)];
  }
  const out: string[] = [];
  for (const word of words) {
    const eq = word.indexOf("=");
    if (eq < 0) {
      if (!isArg) throw new DockerfileError(line, `expected KEY=VALUE, got '${word}'`);
      out.push(word, "");
    } else out.push(word.slice(0, eq), word.slice(eq + 1));
  }
  return out;
}

/** Split on whitespace, honouring double and single quotes and backslash escapes (quotes removed). */
function splitWords(text: string): string[] {
  const words: string[] = [];
  let current = "";
  let inWord = false;
  let quote: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (quote) {
      if (c === quote) quote = undefined;
      else if (c === "\\" && quote === '"' && i + 1 < text.length) current += text[++i];
      else current += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      inWord = true;
    } else if (c === "\\" && i + 1 < text.length) {
      current += text[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(current);
      current = "";
      inWord = false;
    } else {
      current += c;
      inWord = true;
    }
  }
  if (inWord) words.push(current);
  return words;
}

function jsonWords(rest: string, line: number): string[] {
  try {
    const parsed = JSON.parse(rest) as unknown;
    if (Array.isArray(parsed) && parsed.every((w) => typeof w === "string")) return parsed as string[];
  } catch {
    // fall through
  }
  throw new DockerfileError(line, "invalid JSON array");
}

function unquote(text: string): string {
  const words = splitWords(text);
  return words.length === 1 ? (words[0] as string) : text;
}

function quote(word: string): string {
  return /^[A-Za-z0-9_\/.:=,+@%-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}
