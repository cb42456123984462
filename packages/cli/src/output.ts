/** Print either JSON (for scripts) or aligned columns (for people). */
export function printRows(rows: Record<string, unknown>[], columns: string[], json: boolean): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
    return;
  }
  if (rows.length === 0) {
    process.stdout.write("(none)\n");
    return;
  }
  const cells = rows.map((row) => columns.map((column) => formatCell(row[column])));
  const widths = columns.map((column, i) => Math.max(column.length, ...cells.map((line) => line[i]?.length ?? 0)));
  const line = (values: string[]) => values.map((value, i) => value.padEnd(widths[i] ?? 0)).join("  ").trimEnd();
  process.stdout.write(`${line(columns.map((column) => column.toUpperCase()))}\n`);
  for (const values of cells) process.stdout.write(`${line(values)}\n`);
}

function formatCell(value: unknown): string {
  if (value instanceof Date) return value.toISOString();
  if (value === undefined || value === null) return "";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}
