export { Code } from "@connectrpc/connect";
export { BurrowError, type BurrowErrorInit } from "./burrow-error.js";
export { codeName } from "./code-name.js";
export { codeFromHttpStatus, httpStatusFromCode } from "./http-status.js";
export { causeChain, codeFromAbort, codeFromNodeError, errnoOf } from "./node-error.js";
