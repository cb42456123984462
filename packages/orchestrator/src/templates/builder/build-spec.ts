// The build request as the SDK sends it (TemplateBuildStartV2, e2b-compat.md §7) and its validation.
// Unknown fields are ignored: newer SDKs add client hints (forceUpload, gzip, resolveSymlinks).
import { TemplateBuildError } from "./template-build-error.js";

export type StepType = "RUN" | "COPY" | "WORKDIR" | "USER" | "ENV" | "ARG";

export interface BuildStep {
  type: StepType;
  args: string[];
  force: boolean;
  filesHash?: string | undefined;
}

export interface BuildSpec {
  fromImage?: string | undefined;
  fromTemplate?: string | undefined;
  steps: BuildStep[];
  startCmd?: string | undefined;
  readyCmd?: string | undefined;
  /** Rebuild every step (the SDK's `skipCache`). */
  force: boolean;
}

const STEP_TYPES = new Set<string>(["RUN", "COPY", "WORKDIR", "USER", "ENV", "ARG"]);
const HASH = /^[a-f0-9]{64}$/;

function optionalString(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value !== "string") throw new TemplateBuildError("invalid_argument", `${field} must be a string`);
  return value;
}

/** Validate an untrusted TemplateBuildStartV2 body. Errors name the offending step (1-based). */
export function parseBuildSpec(input: unknown): BuildSpec {
  if (typeof input !== "object" || input === null) {
    throw new TemplateBuildError("invalid_argument", "build request must be a JSON object");
  }
  const body = input as Record<string, unknown>;
  const fromImage = optionalString(body.fromImage, "fromImage");
  const fromTemplate = optionalString(body.fromTemplate, "fromTemplate");
  if (fromImage !== undefined && fromTemplate !== undefined) {
    throw new TemplateBuildError("invalid_argument", "set only one of fromImage and fromTemplate");
  }
  const rawSteps = body.steps ?? [];
  if (!Array.isArray(rawSteps)) throw new TemplateBuildError("invalid_argument", "steps must be an array");
  const steps = rawSteps.map((raw: unknown, index): BuildStep => {
    const step = String(index + 1);
    const s = (raw ?? {}) as Record<string, unknown>;
    const type = typeof s.type === "string" ? s.type.toUpperCase() : "";
    if (!STEP_TYPES.has(type)) {
      throw new TemplateBuildError(
        "invalid_argument",
        `step ${step}: unsupported step type '${String(s.type)}' (supported: ${[...STEP_TYPES].join(", ")})`,
        { step },
      );
    }
    const args = s.args ?? [];
    if (!Array.isArray(args) || !args.every((a) => typeof a === "string")) {
      throw new TemplateBuildError("invalid_argument", `step ${step}: args must be an array of strings`, { step });
    }
    const filesHash = optionalString(s.filesHash, `step ${step} filesHash`);
    if (type === "COPY") {
      if (filesHash === undefined || !HASH.test(filesHash)) {
        throw new TemplateBuildError("invalid_argument", `step ${step}: COPY needs a sha256 filesHash`, { step });
      }
      if (args.length < 2) throw new TemplateBuildError("invalid_argument", `step ${step}: COPY needs src and dest`, { step });
    }
    if ((type === "RUN" || type === "WORKDIR" || type === "USER") && (args[0] ?? "") === "") {
      throw new TemplateBuildError("invalid_argument", `step ${step}: ${type} needs an argument`, { step });
    }
    if ((type === "ENV" || type === "ARG") && args.length % 2 !== 0) {
      throw new TemplateBuildError("invalid_argument", `step ${step}: ${type} args must be key/value pairs`, { step });
    }
    return { type: type as StepType, args: args as string[], force: s.force === true, filesHash };
  });
  return {
    fromImage,
    fromTemplate,
    steps,
    startCmd: optionalString(body.startCmd, "startCmd"),
    readyCmd: optionalString(body.readyCmd, "readyCmd"),
    force: body.force === true,
  };
}
