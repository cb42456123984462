import type { ServerResponse } from "node:http";
import { BurrowError, Code } from "@burrow/protocol/errors";

/** True when `method` is one of `allowed`; otherwise sets Allow and throws 405. */
export function allowMethods(res: ServerResponse, method: string, path: string, allowed: readonly string[]): true {
  if (allowed.includes(method)) return true;
  res.setHeader("Allow", allowed.join(", "));
  throw new BurrowError(Code.Unimplemented, `method ${method} not allowed on ${path}`, { reason: "method_not_allowed" });
}
