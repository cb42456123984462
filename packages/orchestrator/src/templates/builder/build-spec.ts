// The build request as the SDK sends it (TemplateBuildStartV2) and its validation.
// Unknown fields are ignored: newer SDKs add client hints (forceUpload, gzip, resolveSymlinks).
import { Code } from "@burrow/protocol";
import { TemplateBuildError } from "./template-build-error.js";

export type StepType = "RUN" | "COPY" | "WORKDIR" | "USER" | "ENV" | "ARG";

export interface BuildStep {
  type: StepType;
  args: string[];
  force: boolean;
  filesHash?: string | undefined;
}

/** Credentials for pulling `fromImage` (the SDK's `fromImageRegistry`). Never logged, stored or part of a cache key. */
export interface RegistryAuth {
  username: string;
  password: string;
}

export interface BuildSpec {
  fromImage?: string | undefined;
  fromImageRegistry?: RegistryAuth | undefined;
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
  if (typeof value !== "string") throw new TemplateBuildError(Code.InvalidArgument, `${field} must be a string`);
  return value;
}

/** Validate an untrusted TemplateBuildStartV2 body. Errors name the offending step (1-based). */
export function parseBuildSpec(input: unknown): BuildSpec {
  if (typeof input !== "object" || input === null) {
    throw new TemplateBuildError(Code.InvalidArgument, "build request must be a JSON object");
  }
  const body = input as Record<string, unknown>;
  const fromImage = optionalString(body.fromImage, "fromImage");
  const fromTemplate = optionalString(body.fromTemplate, "fromTemplate");
  if (fromImage !== undefined && fromTemplate !== undefined) {
    throw new TemplateBuildError(Code.InvalidArgument, "set only one of fromImage and fromTemplate");
  }
  const fromImageRegistry = parseRegistryAuth(body.fromImageRegistry);
  if (fromImageRegistry !== undefined && fromImage === undefined) {
    throw new TemplateBuildError(Code.InvalidArgument, "fromImageRegistry needs fromImage");
  }
  const rawSteps = body.steps ?? [];
  if (!Array.isArray(rawSteps)) throw new TemplateBuildError(Code.InvalidArgument, "steps must be an array");
  const steps = rawSteps.map((raw: unknown, index): BuildStep => {
    const step = String(index + 1);
    const s = (raw ?? {}) as Record<string, unknown>;
    const type = typeof s.type === "string" ? s.type.toUpperCase() : "";
    if (!STEP_TYPES.has(type)) {
      throw new TemplateBuildError(
        Code.InvalidArgument,
        `step ${step}: unsupported step type '${String(s.type)}' (supported: ${[...STEP_TYPES].join(", ")})`,
        { step },
      );
    }
    const args = s.args ?? [];
    if (!Array.isArray(args) || !args.every((a) => typeof a === "string")) {
      throw new TemplateBuildError(Code.InvalidArgument, `step ${step}: args must be an array of strings`, { step });
    }
    const filesHash = optionalString(s.filesHash, `step ${step} filesHash`);
    if (type === "COPY") {
      if (filesHash === undefined || !HASH.test(filesHash)) {
        throw new TemplateBuildError(Code.InvalidArgument, `step ${step}: COPY needs a sha256 filesHash`, { step });
      }
      if (args.length < 2) throw new TemplateBuildError(Code.InvalidArgument, `step ${step}: COPY needs src and dest`, { step });
    }
    if ((type === "RUN" || type === "WORKDIR" || type === "USER") && (args[0] ?? "") === "") {
      throw new TemplateBuildError(Code.InvalidArgument, `step ${step}: ${type} needs an argument`, { step });
    }
    if ((type === "ENV" || type === "ARG") && args.length % 2 !== 0) {
      throw new TemplateBuildError(Code.InvalidArgument, `step ${step}: ${type} args must be key/value pairs`, { step });
    }
    return { type: type as StepType, args: args as string[], force: s.force === true, filesHash };
  });
  return {
    fromImage,
    fromImageRegistry,
    fromTemplate,
    steps,
    startCmd: optionalString(body.startCmd, "startCmd"),
    readyCmd: optionalString(body.readyCmd, "readyCmd"),
    force: body.force === true,
  };
}

/**
 * The SDK's registry credentials: `{type: "registry", username, password}` from fromImage(image, {username,
 * password}); `{type: "gcp", serviceAccountJson}` is Google's `_json_key` basic login; AWS needs a token from
 * AWS's API, which the user can fetch and pass as a plain registry login.
 */
function parseRegistryAuth(value: unknown): RegistryAuth | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "object") throw new TemplateBuildError(Code.InvalidArgument, "fromImageRegistry must be an object");
  const auth = value as Record<string, unknown>;
  const text = (field: string): string => {
    const v = auth[field];
    if (typeof v !== "string" || v === "") throw new TemplateBuildError(Code.InvalidArgument, `fromImageRegistry.${field} must be a non-empty string`);
    return v;
  };
  switch (auth.type) {
    case "registry":
      return { username: text("username"), password: text("password") };
    case "gcp":
      return { username: "_json_key", password: text("serviceAccountJson") };
    case "aws":
      throw new TemplateBuildError(
        Code.Unimplemented,
        "AWS ECR credentials are not exchanged by this server; use fromImage(image, {username: 'AWS', password: <output of `aws ecr get-login-password`>})",
      );
    default:
      throw new TemplateBuildError(Code.InvalidArgument, `fromImageRegistry.type must be registry, gcp or aws, got '${String(auth.type)}'`);
  }
}
