// The template endpoints' answers as the dashboard reads them (E2B's field names, as the official SDK sees them).
export type BuildStatus = "waiting" | "building" | "ready" | "error";

export interface ListedTemplate {
  templateID: string;
  buildID: string;
  aliases: string[];
  names: string[];
  tags: string[];
  cpuCount: number;
  memoryMB: number;
  createdAt: string;
  buildStatus: BuildStatus;
}

export interface BuildSummary {
  buildID: string;
  status: BuildStatus;
  createdAt: string;
  updatedAt: string;
  finishedAt?: string;
  cpuCount: number;
  memoryMB: number;
}

export interface TemplateWithBuilds {
  templateID: string;
  aliases: string[];
  names: string[];
  createdAt: string;
  updatedAt: string;
  builds: BuildSummary[];
}

export interface TemplateTag {
  tag: string;
  buildID: string;
  createdAt: string;
}

export interface BuildLogEntry {
  timestamp: string;
  level: string;
  message: string;
  step?: string;
}

export interface BuildStatusPage {
  buildID: string;
  templateID: string;
  status: BuildStatus;
  logEntries: BuildLogEntry[];
  reason?: { message: string; step?: string };
}

export const templatePath = (ref: string) => `/templates/${encodeURIComponent(ref)}`;
