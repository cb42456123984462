// Turns a notebook cell of JavaScript into a script that keeps state between cells the way a REPL does:
// top-level declarations become globals (so a later cell sees them, and running a cell twice does not fail
// with "already declared"), `import` statements become dynamic imports, top-level `await` works, and the value
// of a final expression statement is the cell's result. The body runs inside an async function called with
// `this` = the global object; the returned promise resolves to the result.
import { parse, type ImportDeclaration, type Options, type Pattern, type Program } from "acorn";
import { BurrowError, Code } from "@burrow/protocol/errors";

interface Edit {
  start: number;
  end: number;
  text: string;
}

/**
 * The reason of code acorn cannot parse (InvalidArgument); the worker then compiles the raw code to report Node's own
 * SyntaxError.
 */
export const CELL_SYNTAX = "cell_syntax";

function cellSyntaxError(message: string): BurrowError {
  return new BurrowError(Code.InvalidArgument, message, { reason: CELL_SYNTAX });
}

const PARSE_OPTIONS: Options = {
  ecmaVersion: "latest",
  allowAwaitOutsideFunction: true,
  allowReturnOutsideFunction: true,
  allowImportExportEverywhere: true,
  allowHashBang: true,
};

function parseCell(code: string): Program {
  try {
    return parse(code, { ...PARSE_OPTIONS, sourceType: "module" });
  } catch {
    try {
      // Sloppy-mode code (`with`, legacy octals) is not a module but is still a fine script.
      return parse(code, { ...PARSE_OPTIONS, sourceType: "script" });
    } catch (error) {
      throw cellSyntaxError((error as Error).message);
    }
  }
}

/** Names a declaration pattern binds: `a`, `{b, c: [d]}`, `...rest`, defaults. */
function boundNames(pattern: Pattern | null, out: string[]): string[] {
  if (!pattern) return out;
  switch (pattern.type) {
    case "Identifier":
      out.push(pattern.name);
      break;
    case "ObjectPattern":
      for (const prop of pattern.properties) boundNames(prop.type === "RestElement" ? prop : prop.value, out);
      break;
    case "ArrayPattern":
      for (const element of pattern.elements) boundNames(element, out);
      break;
    case "RestElement":
      boundNames(pattern.argument, out);
      break;
    case "AssignmentPattern":
      boundNames(pattern.left, out);
      break;
    default:
      break;
  }
  return out;
}

function importReplacement(code: string, node: ImportDeclaration, names: string[]): string {
  const source = code.slice(node.source.start, node.source.end);
  if (node.specifiers.length === 0) return `await import(${source});`;
  const parts: string[] = [];
  const props: string[] = [];
  for (const spec of node.specifiers) {
    const local = spec.local.name;
    names.push(local);
    if (spec.type === "ImportNamespaceSpecifier") parts.push(`${local} = __burrow_m`);
    else if (spec.type === "ImportDefaultSpecifier") props.push(`default: ${local}`);
    else {
      const key = spec.imported.type === "Identifier" ? spec.imported.name : code.slice(spec.imported.start, spec.imported.end);
      props.push(key === local ? local : `${key}: ${local}`);
    }
  }
  if (props.length > 0) parts.push(`({ ${props.join(", ")} } = __burrow_m)`);
  return `{ const __burrow_m = await import(${source}); ${parts.join("; ")}; }`;
}

export interface TransformedCell {
  code: string;
  /** Top-level names the cell declares (now globals). */
  declared: string[];
}

export function transformCell(code: string): TransformedCell {
  const program = parseCell(code);
  const edits: Edit[] = [];
  const declared: string[] = [];
  const functionNames: string[] = [];
  const body = program.body;
  body.forEach((node, index) => {
    const last = index === body.length - 1;
    switch (node.type) {
      case "VariableDeclaration": {
        if (node.kind === "using" || node.kind === "await using") break;
        const assignments: string[] = [];
        for (const declarator of node.declarations) {
          const id = declarator.id;
          boundNames(id, declared);
          const init = declarator.init;
          const target = code.slice(id.start, id.end);
          if (init) assignments.push(`(${target} = ${code.slice(init.start, init.end)})`);
          else if (node.kind !== "var") assignments.push(`(${target} = undefined)`);
        }
        edits.push({ start: node.start, end: node.end, text: assignments.length > 0 ? `void (${assignments.join(", ")});` : ";" });
        break;
      }
      case "FunctionDeclaration": {
        const name = node.id?.name;
        if (name) {
          declared.push(name);
          functionNames.push(name);
        }
        break;
      }
      case "ClassDeclaration": {
        const name = node.id.name;
        declared.push(name);
        edits.push({ start: node.start, end: node.start, text: `${name} = ` });
        edits.push({ start: node.end, end: node.end, text: ";" });
        break;
      }
      case "ImportDeclaration":
        edits.push({ start: node.start, end: node.end, text: importReplacement(code, node, declared) });
        break;
      case "ExportNamedDeclaration":
      case "ExportDefaultDeclaration":
        throw cellSyntaxError("export is not supported in a code cell");
      case "ExpressionStatement":
        if (last) {
          const expression = node.expression;
          edits.push({ start: node.start, end: node.end, text: `return (${code.slice(expression.start, expression.end)});` });
        }
        break;
      default:
        break;
    }
  });
  let out = code;
  for (const edit of edits.sort((a, b) => b.start - a.start)) out = out.slice(0, edit.start) + edit.text + out.slice(edit.end);
  const unique = [...new Set(declared)];
  // Function declarations stay hoisted inside the wrapper; copying them to the globals first makes them visible
  // to later cells while keeping call-before-definition working in this one.
  const exportFunctions = functionNames.map((name) => `this.${name} = ${name};`).join(" ");
  const prefix = unique.length > 0 ? `var ${unique.join(", ")};\n` : "";
  return { code: `${prefix}(async function () { ${exportFunctions}\n${out}\n}).call(globalThis);`, declared: unique };
}
