// The gateway's usage accounting off the request path: the SSE meter reading usage from events split anywhere
// (mid-line, mid-character) while parsing only lines that mention usage, and the buffer that gathers counts in
// memory and writes them to a real SQLite store in one transaction.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { openStore, type Store } from "../src/store/store.js";
import { UsageMeter } from "../src/models/usage-meter.js";
import { UsageBuffer } from "../src/models/usage-buffer.js";

const OPENAI_STREAM = [
  `data: {"id":"c1","choices":[{"index":0,"delta":{"content":"héllo ✓"}}]}\n\n`,
  `data: {"id":"c1","choices":[{"index":0,"delta":{"content":"usage is a word here"}}]}\n\n`,
  `data: {"id":"c1","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}\n\n`,
  "data: [DONE]\n\n",
].join("");

const ANTHROPIC_STREAM = [
  `event: message_start\r\ndata: {"type":"message_start","message":{"id":"m1","usage":{"input_tokens":25,"output_tokens":1}}}\r\n\r\n`,
  `event: content_block_delta\r\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}\r\n\r\n`,
  `event: message_delta\r\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}}\r\n\r\n`,
  `event: message_stop\r\ndata: {"type":"message_stop"}\r\n\r\n`,
].join("");

/** The stream cut into pieces of `size` bytes (cuts fall mid-line and, with the multi-byte text, mid-character). */
function pieces(text: string, size: number): Buffer[] {
  const all = Buffer.from(text, "utf8");
  const out: Buffer[] = [];
  for (let i = 0; i < all.length; i += size) out.push(all.subarray(i, i + size));
  return out;
}

describe("UsageMeter", () => {
  test.each([1, 2, 3, 7, 64, 100_000])("reads OpenAI's and Anthropic's streamed usage from pieces of %i bytes", (size) => {
    const openai = new UsageMeter("text/event-stream; charset=utf-8");
    for (const p of pieces(OPENAI_STREAM, size)) openai.push(p);
    expect(openai.finish()).toEqual({ inputTokens: 11, outputTokens: 7 });

    const anthropic = new UsageMeter("text/event-stream");
    for (const p of pieces(ANTHROPIC_STREAM, size)) anthropic.push(p);
    expect(anthropic.finish()).toEqual({ inputTokens: 25, outputTokens: 15 });
  });

  test("a stream without usage, or whose last event has no newline, reports what it carried", () => {
    const none = new UsageMeter("text/event-stream");
    none.push(Buffer.from(`data: {"choices":[{"delta":{"content":"x"}}]}\n\n`));
    expect(none.finish()).toBeUndefined();

    const unterminated = new UsageMeter("text/event-stream");
    unterminated.push(Buffer.from(`data: {"usage":{"prompt_tokens":3,"completion_tokens":4}}`));
    expect(unterminated.finish()).toEqual({ inputTokens: 3, outputTokens: 4 });
  });

  test("a line longer than the limit is skipped whole, its tail included", () => {
    const meter = new UsageMeter("text/event-stream");
    // A comment line over 1 MiB whose tail looks like a usage event: read as a line of its own it would count 999
    // (the latest usage wins).
    meter.push(Buffer.from(`data: {"usage":{"prompt_tokens":5,"completion_tokens":6}}\n\n: padding `));
    const huge = "x".repeat(64 * 1024);
    for (let i = 0; i < 16; i++) meter.push(Buffer.from(huge));
    meter.push(Buffer.from(`data: {"usage":{"prompt_tokens":999,"completion_tokens":999}}\n\ndata: {"choices":[]}\n\n`));
    expect(meter.finish()).toEqual({ inputTokens: 5, outputTokens: 6 });
  });

  test("a JSON answer's usage is read at its end", () => {
    const meter = new UsageMeter("application/json");
    for (const p of pieces(JSON.stringify({ id: "x", usage: { prompt_tokens: 8, completion_tokens: 2 } }), 5)) meter.push(p);
    expect(meter.finish()).toEqual({ inputTokens: 8, outputTokens: 2 });
  });
});

describe("UsageBuffer", () => {
  let dir: string;
  let store: Store;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "burrow-model-usage-"));
    store = openStore(dir);
  });
  afterEach(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("counts are held until a flush, summed per sandbox, key and model, and added to what the store has", () => {
    const errors: unknown[] = [];
    const buffer = new UsageBuffer(store.models, (err) => errors.push(err));
    buffer.add("sbx-a", 1, "gpt", 10, 5);
    buffer.add("sbx-a", 1, "gpt", 1, 2);
    buffer.add("sbx-b", 1, "gpt", 3, 3);
    buffer.add(null, 2, "claude", 4, 0);
    expect(store.models.usage()).toEqual([]);

    buffer.flush();
    expect(store.models.usage("sbx-a")).toEqual([{ sandboxId: "sbx-a", apiKeyId: 1, model: "gpt", requests: 2, inputTokens: 11, outputTokens: 7 }]);
    expect(store.models.usage()).toHaveLength(3);

    buffer.add("sbx-a", 1, "gpt", 100, 100);
    buffer.flush();
    buffer.flush();
    expect(store.models.usage("sbx-a")[0]).toMatchObject({ requests: 3, inputTokens: 111, outputTokens: 107 });
    expect(store.models.usage().find((u) => u.sandboxId === null)).toMatchObject({ apiKeyId: 2, model: "claude", requests: 1 });
    expect(errors).toEqual([]);
  });

  test("pending counts are written by the timer without a reader asking", async () => {
    const buffer = new UsageBuffer(store.models, () => {});
    buffer.add("sbx-t", 1, "m", 1, 1);
    await expect.poll(() => store.models.usage("sbx-t"), { timeout: 10_000 }).toHaveLength(1);
  });

  test("a failed write is reported, not thrown at the request that happens to flush", () => {
    const errors: unknown[] = [];
    const buffer = new UsageBuffer(store.models, (err) => errors.push(err));
    buffer.add("sbx-x", 1, "m", 1, 1);
    store.close();
    expect(() => buffer.flush()).not.toThrow();
    expect(errors).toHaveLength(1);
    store = openStore(dir);
  });
});
