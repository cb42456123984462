// TypeScript cells are type-stripped with esbuild's transform (no type checking, as in a REPL). Imports stay as
// written (verbatimModuleSyntax): a cell may import a value that only a later cell uses.
import { BurrowError, Code } from "@burrow/protocol/errors";

/** A cell esbuild cannot compile (InvalidArgument); `name` and `traceback` are what the run reports, as E2B's do. */
export class TypeScriptCompileError extends BurrowError {
  override name = "TypeScriptCompilerError";
  constructor(
    message: string,
    readonly traceback: string,
  ) {
    super(Code.InvalidArgument, message, { reason: "typescript_compile" });
  }
}

interface EsbuildMessage {
  text: string;
  location: { line: number; column: number; lineText: string } | null;
}

export async function stripTypes(code: string): Promise<string> {
  const { transform } = await import("esbuild");
  try {
    const result = await transform(code, {
      loader: "ts",
      target: "esnext",
      tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true } },
      logLevel: "silent",
    });
    return result.code;
  } catch (error) {
    const errors = ((error as { errors?: EsbuildMessage[] }).errors ?? []).filter((e) => e.text);
    if (errors.length === 0) throw error;
    const first = errors[0]!;
    const details = errors
      .map((e) => (e.location ? `cell:${e.location.line}:${e.location.column + 1}: ${e.text}\n  ${e.location.lineText}` : e.text))
      .join("\n");
    throw new TypeScriptCompileError(first.location ? `${first.text} (line ${first.location.line})` : first.text, details);
  }
}
