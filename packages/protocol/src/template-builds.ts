// E2B's template build REST shapes, in its field names (buildID, templateID, logEntries, …): what the orchestrator's
// template builder answers and the server's template routes send as they are.

export type BuildStatus = "waiting" | "building" | "ready" | "error";

export type BuildLogLevel = "debug" | "info" | "warn" | "error";

export interface BuildLogEntry {
  timestamp: string;
  level: BuildLogLevel;
  message: string;
  step?: string | undefined;
}

export interface BuildStatusReason {
  message: string;
  step?: string | undefined;
  logEntries?: BuildLogEntry[];
}

/** POST /v3/templates. */
export interface RequestedBuild {
  templateID: string;
  buildID: string;
  names: string[];
  tags: string[];
  aliases: string[];
  public: boolean;
}

/** GET …/builds/{id}/status. */
export interface BuildStatusPage {
  buildID: string;
  templateID: string;
  status: BuildStatus;
  logEntries: BuildLogEntry[];
  logs: string[];
  reason?: BuildStatusReason | undefined;
}

/** One entry of GET /templates. */
export interface TemplateSummary {
  templateId: string;
  aliases: string[];
  buildId?: string | undefined;
  tags: string[];
  createdAt: string;
  cpuCount: number;
  memoryMB: number;
  buildStatus: BuildStatus;
}

/** One build in GET /templates/{templateID} (`TemplateBuild`). */
export interface TemplateBuildSummary {
  buildID: string;
  status: BuildStatus;
  createdAt: string;
  updatedAt: string;
  finishedAt?: string | undefined;
  cpuCount: number;
  memoryMB: number;
}

/** GET /templates/{templateID}: a template and its builds, newest first (`TemplateWithBuilds`). */
export interface TemplateWithBuilds {
  templateID: string;
  aliases: string[];
  names: string[];
  createdAt: string;
  updatedAt: string;
  builds: TemplateBuildSummary[];
}

/** One entry of GET /templates/{templateID}/tags. */
export interface TemplateTag {
  tag: string;
  buildID: string;
  createdAt: string;
}
