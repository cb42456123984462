// A sandbox's lifecycle and network settings as GET /sandboxes/{id} answers them, one line per setting.
import { age } from "./format.js";
import type { SandboxDetail } from "./api.js";

/** Nested settings as dotted names, lists joined: {network: {allowOut: ["a"]}} → "network.allowOut: a". */
function flatten(value: unknown, prefix: string, out: [string, string][]): void {
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) flatten(v, prefix ? `${prefix}.${k}` : k, out);
  } else if (Array.isArray(value)) {
    out.push([prefix, value.length === 0 ? "none" : value.map((v) => (typeof v === "object" ? JSON.stringify(v) : String(v))).join(", ")]);
  } else {
    out.push([prefix, String(value)]);
  }
}

export function SandboxSettings({ detail }: { detail: SandboxDetail }) {
  const lines: [string, string][] = [
    ["state", detail.state],
    ["template", detail.alias ? `${detail.alias} (${detail.templateID})` : detail.templateID],
    ["resources", `${detail.cpuCount} CPU · ${detail.memoryMB} MiB${detail.diskSizeMB ? ` · ${detail.diskSizeMB} MiB disk` : ""}`],
    ["started", `${detail.startedAt} (${age(detail.startedAt)} ago)`],
    ["ends", detail.endAt],
    ["envd", detail.envdVersion],
  ];
  flatten(detail.lifecycle ?? {}, "lifecycle", lines);
  if (detail.allowInternetAccess !== undefined) lines.push(["internet", detail.allowInternetAccess === false ? "denied" : "allowed"]);
  flatten(detail.network ?? {}, "network", lines);
  for (const m of detail.volumeMounts ?? []) lines.push([`volume ${m.path ?? ""}`, m.name ?? m.volumeID ?? JSON.stringify(m)]);
  flatten(detail.metadata, "metadata", lines);
  return (
    <dl class="settings" id="sandbox-settings">
      {lines.map(([k, v]) => [<dt key={`${k}-k`}>{k}</dt>, <dd key={`${k}-v`} data-setting={k}>{v}</dd>])}
    </dl>
  );
}
