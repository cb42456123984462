import { BurrowError, Code } from "@burrow/protocol/errors";
import { safeEqual } from "./compare.js";
import { fileSignature, type FileOperation } from "./signature.js";

export const UNAUTHORIZED_MESSAGE =
  "unauthorized access, please provide a valid access token or method signing if supported";

/** Paths open without the access token: the SDK's health probe, /files (own checks below) and /init (own rule). */
export function isTokenExempt(method: string, pathname: string): boolean {
  if (pathname === "/health") return method === "GET" || method === "HEAD";
  if (pathname === "/files") return method === "GET" || method === "HEAD" || method === "POST";
  return pathname === "/init" && method === "POST";
}

export function checkAccessToken(token: string | undefined, header: string | undefined): void {
  if (token === undefined) return;
  if (header === undefined || !safeEqual(header, token)) throw new BurrowError(Code.Unauthenticated, UNAUTHORIZED_MESSAGE);
}

export interface FileAuthInput {
  token: string | undefined;
  header: string | undefined;
  path: string;
  username: string;
  operation: FileOperation;
  signature: string | null;
  signatureExpiration: string | null;
  nowSeconds: number;
}

/** /files authorization, in envd's documented order and with its exact messages. */
export function checkFileAccess(a: FileAuthInput): void {
  if (a.token === undefined) return;
  if (a.header !== undefined) {
    if (!safeEqual(a.header, a.token)) throw new BurrowError(Code.Unauthenticated, "access token present in header but does not match");
    return;
  }
  if (!a.signature) throw new BurrowError(Code.Unauthenticated, "missing signature query parameter");
  let expiration: number | undefined;
  if (a.signatureExpiration !== null) {
    expiration = Number(a.signatureExpiration);
    if (!/^-?\d+$/.test(a.signatureExpiration) || !Number.isSafeInteger(expiration)) {
      throw new BurrowError(Code.InvalidArgument, "invalid signature_expiration");
    }
  }
  const expected = fileSignature(a.path, a.operation, a.username, a.token, expiration);
  if (!safeEqual(a.signature, expected)) throw new BurrowError(Code.Unauthenticated, "invalid signature");
  if (expiration !== undefined && expiration < a.nowSeconds) throw new BurrowError(Code.Unauthenticated, "signature is already expired");
}
