// TemplateBuilder.waitForBuild with real builds (ENV-only steps on a template in a real store, so no sandbox is
// needed): a build that was never started is not reported as finished, and the abort listener a wait adds on the
// caller's signal goes when the wait ends, however many waits share one long-lived signal.
import { mkdirSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { getEventListeners } from "node:events";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Code } from "@burrow/protocol";
import { resolveOrchestratorConfig } from "../src/config.js";
import { silentLogger } from "../src/logger.js";
import type { SandboxHost } from "../src/sandbox-host.js";
import { TemplateBuildError } from "../src/templates/builder/template-build-error.js";
import { TemplateBuilder } from "../src/templates/builder/template-builder.js";
import { TemplateStore } from "../src/templates/template-store.js";

let stateDir: string;
let builder: TemplateBuilder;

/** A build request the builder runs on the host alone: one state step on the `parent` template. */
const spec = (value: string) => ({ fromTemplate: "parent", steps: [{ type: "ENV", args: ["VALUE", value] }] });

beforeEach(async () => {
  stateDir = await mkdtemp("/var/tmp/burrow-wait-build-");
  const store = new TemplateStore(join(stateDir, "templates"), join(stateDir, "layers"));
  await store.load();
  mkdirSync(join(stateDir, "layers", "parent-layer"));
  await store.save({
    templateId: "parent",
    aliases: ["parent"],
    layers: ["parent-layer"],
    defaults: { cpuCount: 1, memoryMB: 256, diskMB: 512, pids: 128 },
    createdAt: new Date().toISOString(),
  });
  // ENV-only builds never reach the sandbox host.
  builder = new TemplateBuilder({ store, host: {} as SandboxHost, config: resolveOrchestratorConfig({ stateDir }), logger: silentLogger });
});

afterEach(async () => {
  await builder.close();
  await rm(stateDir, { recursive: true, force: true });
});

describe("waitForBuild", () => {
  it("does not report a build that was requested but never started as finished", async () => {
    const requested = builder.requestBuild({ name: "never-started" });
    const waited = builder.waitForBuild(requested.buildID);
    await expect(waited).rejects.toBeInstanceOf(TemplateBuildError);
    await expect(waited).rejects.toMatchObject({ code: Code.FailedPrecondition, message: expect.stringMatching(/not been started/) });
    expect(builder.status(requested.templateID, requested.buildID).status).toBe("waiting");

    // Started, the same build is waited for to its end.
    builder.startBuild(requested.templateID, requested.buildID, spec("1"));
    const done = await builder.waitForBuild(requested.buildID);
    expect(done.status).toBe("ready");
  });

  it("leaves no abort listener on a long-lived signal, over many waits on running and finished builds", async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on("warning", onWarning);
    try {
      const longLived = new AbortController().signal;
      for (let i = 0; i < 30; i++) {
        const requested = builder.requestBuild({ name: `many-${i}` });
        builder.startBuild(requested.templateID, requested.buildID, spec(String(i)));
        // Several waits on the same signal while the build runs, then one more once it has finished.
        const running = await Promise.all([1, 2, 3].map(() => builder.waitForBuild(requested.buildID, longLived)));
        expect(running.map((r) => r.status)).toEqual(["ready", "ready", "ready"]);
        expect(getEventListeners(longLived, "abort")).toHaveLength(0);
        expect((await builder.waitForBuild(requested.buildID, longLived)).status).toBe("ready");
        expect(getEventListeners(longLived, "abort")).toHaveLength(0);
      }
      // Warnings are emitted on a later tick.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => w.name === "MaxListenersExceededWarning")).toEqual([]);
    } finally {
      process.off("warning", onWarning);
    }
  });

  it("stops waiting (not the build) when the signal aborts, and removes its listener", async () => {
    const requested = builder.requestBuild({ name: "aborted-wait" });
    builder.startBuild(requested.templateID, requested.buildID, spec("1"));
    const controller = new AbortController();
    const waited = builder.waitForBuild(requested.buildID, controller.signal);
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(1);
    controller.abort(new Error("caller gave up"));
    await expect(waited).rejects.toThrow("caller gave up");
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
    // An already aborted signal: rejected at once, nothing added.
    await expect(builder.waitForBuild(requested.buildID, controller.signal)).rejects.toThrow("caller gave up");
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
    // The build itself went on.
    expect((await builder.waitForBuild(requested.buildID)).status).toBe("ready");
  });
});
