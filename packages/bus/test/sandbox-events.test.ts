import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Code } from "@burrow/protocol";
import {
  DEFAULT_SANDBOX_EVENT_MAX_BYTES, EmbeddedBus, SANDBOX_EVENT_STREAM, decodeSandboxEvent, ensureSandboxEventStream, matchesSandboxEvent,
  parseSandboxEventSubject, publishSandboxEvent, sandboxEventPattern, sandboxEventStreamLimits, sandboxEventSubject, subscribeSandboxEvents,
  type SandboxEvent,
} from "../src/index.js";

describe("sandbox event subjects", () => {
  it("addresses events by template, sandbox, category and type", () => {
    expect(sandboxEventSubject({ templateId: "base", sandboxId: "sbx1", category: "fs", type: "write" })).toBe("sbx.base.sbx1.fs.write");
    expect(sandboxEventPattern({ sandboxId: "sbx1" })).toBe("sbx.*.sbx1.>");
    expect(sandboxEventPattern({ templateId: "base" })).toBe("sbx.base.*.>");
    expect(sandboxEventPattern({ category: "fs", type: "write" })).toBe("sbx.*.*.fs.write");
    expect(sandboxEventPattern({ category: "proc" })).toBe("sbx.*.*.proc.*");
  });

  it("escapes ids so they can neither split a token nor widen a pattern", () => {
    const s = sandboxEventSubject({ templateId: "org/py.3.12", sandboxId: "a*b>c", category: "lifecycle", type: "created" });
    expect(s.split(".")).toHaveLength(5);
    expect(s).not.toMatch(/[*>]/);
    expect(parseSandboxEventSubject(s)).toEqual({ templateId: "org/py.3.12", sandboxId: "a*b>c", category: "lifecycle", type: "created" });
    expect(parseSandboxEventSubject("agent.x.inbox")).toBeUndefined();
  });

  it("filters on metadata and path prefix after the subject match", () => {
    const e: SandboxEvent = { category: "fs", type: "write", sandboxId: "s", templateId: "t", path: "/data/out/a.csv", metadata: { stage: "collect" } };
    expect(matchesSandboxEvent({ metadata: { stage: "collect" }, pathPrefix: "/data/out/" }, e)).toBe(true);
    expect(matchesSandboxEvent({ metadata: { stage: "clean" } }, e)).toBe(false);
    expect(matchesSandboxEvent({ pathPrefix: "/tmp/" }, e)).toBe(false);
    expect(matchesSandboxEvent({ category: "proc" }, e)).toBe(false);
  });
});

describe("publishing sandbox events", () => {
  let bus: EmbeddedBus;
  beforeEach(async () => {
    bus = new EmbeddedBus({ path: ":memory:" });
    await ensureSandboxEventStream(bus);
  });
  afterEach(async () => {
    await bus.close();
  });

  it("delivers live to matching subscribers and keeps them in the event stream", async () => {
    const ac = new AbortController();
    const live = subscribeSandboxEvents(bus, { templateId: "py", metadata: { team: "a" } }, { signal: ac.signal })[Symbol.asyncIterator]();
    const next = live.next();
    await publishSandboxEvent(bus, { category: "lifecycle", type: "created", sandboxId: "s1", templateId: "py", metadata: { team: "b" } });
    await publishSandboxEvent(bus, { category: "proc", type: "exited", sandboxId: "s2", templateId: "node", pid: 7, exitCode: 0, metadata: { team: "a" } });
    await publishSandboxEvent(bus, { category: "proc", type: "exited", sandboxId: "s3", templateId: "py", pid: 9, exitCode: 3, metadata: { team: "a" } });
    const got = (await next).value as SandboxEvent;
    expect(got).toMatchObject({ category: "proc", type: "exited", sandboxId: "s3", exitCode: 3 });
    expect(got.atMs).toBeGreaterThan(0);
    ac.abort();
    const c = await bus.consumer(SANDBOX_EVENT_STREAM, { durable: "all" });
    expect((await c.info()).numPending).toBe(3);
    const first = await c.next({ timeoutMs: 0 });
    expect(first!.headers["burrow-meta-team"]).toBe("b");
    expect(first!.headers["burrow-event"]).toBe("lifecycle.created");
    await c.close();
  });

  it("publishes process output as a live-only event when asked", async () => {
    const ack = await publishSandboxEvent(bus, { category: "proc", type: "output", sandboxId: "s", templateId: "t", pid: 1, stream: "stdout", dataBase64: "aGk=" }, { durable: false });
    expect(ack).toBeUndefined();
    const durable = await publishSandboxEvent(bus, { category: "fs", type: "rename", sandboxId: "s", templateId: "t", path: "/b", oldPath: "/a" });
    expect(durable).toMatchObject({ stream: SANDBOX_EVENT_STREAM, duplicate: false });
  });
});

describe("the sandbox event stream's limits", () => {
  it("keeps 24 h and 1 GiB by default, takes given values, and refuses bad ones", () => {
    expect(sandboxEventStreamLimits({})).toEqual({ maxAgeMs: 86_400_000, maxBytes: DEFAULT_SANDBOX_EVENT_MAX_BYTES });
    expect(DEFAULT_SANDBOX_EVENT_MAX_BYTES).toBe(1024 ** 3);
    expect(sandboxEventStreamLimits({ maxBytes: 5000, maxAgeMs: 60_000 })).toEqual({ maxAgeMs: 60_000, maxBytes: 5000 });
    expect(() => sandboxEventStreamLimits({ maxBytes: 0 })).toThrow(expect.objectContaining({ code: Code.InvalidArgument }));
    expect(() => sandboxEventStreamLimits({ maxAgeMs: 1.5 })).toThrow(expect.objectContaining({ code: Code.InvalidArgument }));
  });

  it("discards the oldest events past the byte cap and keeps the newest", async () => {
    const bus = new EmbeddedBus({ path: ":memory:" });
    try {
      await ensureSandboxEventStream(bus, { maxBytes: 20_000 });
      for (let i = 0; i < 500; i++) {
        await publishSandboxEvent(bus, { category: "fs", type: "write", sandboxId: "s", templateId: "t", path: `/w/${i}`, metadata: { team: "a" } });
      }
      expect(bus.store.streamBytes(SANDBOX_EVENT_STREAM)).toBeLessThanOrEqual(20_000);
      const c = await bus.consumer(SANDBOX_EVENT_STREAM, { durable: "all" });
      const { numPending } = await c.info();
      expect(numPending).toBeGreaterThan(20);
      expect(numPending).toBeLessThan(500);
      const paths: string[] = [];
      for (let m = await c.next({ timeoutMs: 0 }); m; m = await c.next({ timeoutMs: 0 })) {
        const e = decodeSandboxEvent(m);
        if (e.category === "fs") paths.push(e.path);
        await m.ack();
      }
      expect(paths).toEqual(Array.from({ length: numPending }, (_, i) => `/w/${500 - numPending + i}`));
      await c.close();
    } finally {
      await bus.close();
    }
  });
});
