// The items of a streamed /execute body, as E2B's SDKs read them (one JSON object per line).

export type ExecutionItem =
  | { type: "number_of_executions"; execution_count: number }
  | { type: "stdout" | "stderr"; text: string; timestamp: string }
  | ({ type: "result"; is_main_result: boolean; extra: Record<string, unknown> } & Record<string, unknown>)
  | { type: "error"; name: string; value: string; traceback: string };

/** MIME type → field of a result item; everything else goes to `extra`. */
const MIME_FIELDS: Record<string, string> = {
  "text/plain": "text",
  "text/html": "html",
  "text/markdown": "markdown",
  "image/svg+xml": "svg",
  "image/png": "png",
  "image/jpeg": "jpeg",
  "application/pdf": "pdf",
  "text/latex": "latex",
  "application/json": "json",
  "application/javascript": "javascript",
  "e2b/data": "data",
  "e2b/chart": "chart",
};

/** A plain-text repr of a string is its quoted form ('abc'); clients get the string itself. */
function unquote(text: string): string {
  if (text.length >= 2 && (text[0] === "'" || text[0] === '"') && text.at(-1) === text[0]) return text.slice(1, -1);
  return text;
}

export function resultItem(data: Record<string, unknown>, isMain: boolean): ExecutionItem {
  const item: Record<string, unknown> = { type: "result" };
  const extra: Record<string, unknown> = {};
  for (const [mime, value] of Object.entries(data)) {
    if (value === null || value === undefined) continue;
    const field = MIME_FIELDS[mime];
    if (field === undefined) {
      extra[mime] = value;
      continue;
    }
    if (field === "chart" && (typeof value !== "object" || Object.keys(value).length === 0)) continue;
    item[field] = field === "text" && typeof value === "string" ? unquote(value) : value;
  }
  item.extra = extra;
  item.is_main_result = isMain;
  return item as ExecutionItem;
}
