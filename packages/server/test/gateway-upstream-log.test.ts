// Upstream failures are all accounted for in the log, but a burst is logged as a few lines and a count by cause.
import { describe, expect, it } from "vitest";
import { pino } from "pino";
import { UpstreamFailureLog } from "../src/gateway/upstream-log.js";
import { upstreamFailure } from "../src/gateway/upstream-failure.js";

function capture() {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: "debug" }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { lines, logger };
}

const ctx = { sandboxId: "sbx", port: 49983, method: "POST", url: "/process.Process/Start", retried: false, live: true };
const attempt = { reused: false, connected: true, answered: false };

describe("UpstreamFailureLog", () => {
  it("logs the first failures of an interval one by one and the rest as counts by cause when it ends", async () => {
    const { lines, logger } = capture();
    const log = new UpstreamFailureLog(logger, { burst: 2, intervalMs: 100 });
    const reset = Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
    const refused = Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
    for (let i = 0; i < 5; i++) log.record(upstreamFailure(reset, attempt), ctx);
    log.record(upstreamFailure(refused, attempt), ctx);
    expect(lines.map((l) => [l["level"], l["code"], l["cause"]])).toEqual([
      [40, "ECONNRESET", "closed"],
      [40, "ECONNRESET", "closed"],
    ]);
    for (let i = 0; i < 100 && lines.length < 3; i++) await new Promise((r) => setTimeout(r, 50));
    expect(lines[2]).toMatchObject({ level: 40, total: 4, failures: { "closed/ECONNRESET": 3, "refused/ECONNREFUSED": 1 } });
    // A new interval logs one by one again.
    log.record(upstreamFailure(refused, attempt), ctx);
    expect(lines.at(-1)).toMatchObject({ level: 40, code: "ECONNREFUSED", sandboxId: "sbx", port: 49983, retried: false });
  });

  it("logs failures of a sandbox that is going away at debug level only, outside the budget", () => {
    const { lines, logger } = capture();
    const log = new UpstreamFailureLog(logger, { burst: 1 });
    const reset = Object.assign(new Error("aborted"), { code: "ECONNRESET" });
    log.record(upstreamFailure(reset, attempt), { ...ctx, live: false });
    log.record(upstreamFailure(reset, attempt), ctx);
    expect(lines.map((l) => l["level"])).toEqual([20, 40]);
  });
});
