// A failed template build. `step` is E2B's `reason.step`: "base", "finalize" or the 1-based step number as a
// string; the server reports it with the build's status.
import { BurrowError, type BurrowErrorInit, type Code } from "@burrow/protocol";

export class TemplateBuildError extends BurrowError {
  override name = "TemplateBuildError";
  readonly step: string | undefined;

  constructor(code: Code, message: string, init: BurrowErrorInit & { step?: string | undefined } = {}) {
    super(code, message, init);
    this.step = init.step;
  }
}
