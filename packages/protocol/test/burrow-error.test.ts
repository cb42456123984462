import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { BurrowError, Code, codeFromHttpStatus, codeName, httpStatusFromCode } from "../src/index.js";
// A free loopback port: nothing listens on it once it is returned.
import { freePort } from "../../../test/helpers/server-process.js";

class StepError extends BurrowError {
  override name = "StepError";
}

describe("BurrowError", () => {
  it("carries a code, a reason that defaults to the code's name, details and a cause", () => {
    const cause = new Error("disk");
    const plain = new BurrowError(Code.NotFound, "sandbox x not found");
    const full = new BurrowError(Code.ResourceExhausted, "over quota", { reason: "snapshot_storage", details: { limitBytes: 5 }, cause });
    expect(plain).toMatchObject({ code: Code.NotFound, reason: "not_found", message: "sandbox x not found", name: "BurrowError" });
    expect(plain.cause).toBeUndefined();
    expect(full).toMatchObject({ code: Code.ResourceExhausted, reason: "snapshot_storage", details: { limitBytes: 5 } });
    expect(full.cause).toBe(cause);
  });

  it("names every code the way Connect writes it", () => {
    expect(codeName(Code.NotFound)).toBe("not_found");
    expect(codeName(Code.DeadlineExceeded)).toBe("deadline_exceeded");
    expect(codeName(Code.Canceled)).toBe("canceled");
    expect(codeName(99 as Code)).toBe("unknown");
  });

  it("is recognised across copies of the module, while subclasses keep their own identity", async () => {
    const url = pathToFileURL(join(import.meta.dirname, "../dist/errors/burrow-error.js")).href;
    const copy = (await import(`${url}?copy`)) as { BurrowError: typeof BurrowError };
    expect(copy.BurrowError).not.toBe(BurrowError);
    const foreign = new copy.BurrowError(Code.Internal, "from another bundle");
    expect(foreign instanceof BurrowError).toBe(true);
    expect(new BurrowError(Code.Internal, "x") instanceof copy.BurrowError).toBe(true);
    expect(new StepError(Code.Internal, "step") instanceof BurrowError).toBe(true);
    expect(new BurrowError(Code.Internal, "x") instanceof StepError).toBe(false);
    expect(new Error("plain") instanceof BurrowError).toBe(false);
    expect({ code: Code.Internal, message: "look-alike" } instanceof BurrowError).toBe(false);
  });
});

describe("BurrowError.from", () => {
  it("keeps a BurrowError as it is", () => {
    const error = new StepError(Code.InvalidArgument, "bad step", { reason: "bad_step" });
    expect(BurrowError.from(error)).toBe(error);
  });

  it("reports an aborted signal as Canceled and a timed-out one as DeadlineExceeded", async () => {
    const controller = new AbortController();
    controller.abort();
    expect(BurrowError.from(controller.signal.reason)).toMatchObject({ code: Code.Canceled, reason: "canceled" });
    const timeout = AbortSignal.timeout(1);
    await new Promise((resolve) => timeout.addEventListener("abort", resolve));
    expect(BurrowError.from(timeout.reason)).toMatchObject({ code: Code.DeadlineExceeded });
    const fetchAborted = await fetch("http://127.0.0.1:1/", { signal: controller.signal }).catch((e: unknown) => e);
    expect(BurrowError.from(fetchAborted).code).toBe(Code.Canceled);
  });

  it("maps Node system errors by errno, also when they are the cause of another error", async () => {
    const missing = await readFile("/nonexistent/burrow-error-test").catch((e: unknown) => e);
    expect(BurrowError.from(missing)).toMatchObject({ code: Code.NotFound, message: (missing as Error).message });
    const refused = await fetch(`http://127.0.0.1:${await freePort()}/`).catch((e: unknown) => e);
    expect((refused as Error).name).toBe("TypeError");
    expect(BurrowError.from(refused, Code.Internal).code).toBe(Code.Unavailable);
    expect(BurrowError.from(Object.assign(new Error("quota"), { errno: -122, code: "Unknown system error -122" })).code).toBe(
      Code.ResourceExhausted,
    );
  });

  it("keeps a ConnectError's code, but reports a broken connection as Unavailable rather than Aborted", () => {
    expect(BurrowError.from(new ConnectError("no such process", Code.NotFound))).toMatchObject({
      code: Code.NotFound,
      message: "no such process",
    });
    const reset = Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
    const broken = new ConnectError("socket hang up", Code.Aborted, undefined, undefined, reset);
    expect(BurrowError.from(broken).code).toBe(Code.Unavailable);
  });

  it("uses the fallback for anything else", () => {
    expect(BurrowError.from(new Error("odd"), Code.Internal)).toMatchObject({ code: Code.Internal, message: "odd" });
    expect(BurrowError.from("a string")).toMatchObject({ code: Code.Unknown, message: "a string" });
  });
});

describe("HTTP statuses", () => {
  it("map every code to Connect's status and a status back to the first code that has it", () => {
    expect(httpStatusFromCode(Code.NotFound)).toBe(404);
    expect(httpStatusFromCode(Code.Canceled)).toBe(499);
    expect(httpStatusFromCode(Code.FailedPrecondition)).toBe(400);
    expect(codeFromHttpStatus(400)).toBe(Code.InvalidArgument);
    expect(codeFromHttpStatus(409)).toBe(Code.AlreadyExists);
    expect(codeFromHttpStatus(507)).toBe(Code.ResourceExhausted);
    expect(codeFromHttpStatus(418)).toBe(Code.Unknown);
    for (const code of Object.values(Code).filter((c): c is Code => typeof c === "number")) {
      expect(httpStatusFromCode(codeFromHttpStatus(httpStatusFromCode(code)))).toBe(httpStatusFromCode(code));
    }
  });
});
