// Reads token usage from a provider's answer as it streams past, without holding it back: a JSON answer's `usage`
// at its end, an SSE stream's `usage` wherever events carry it (OpenAI's final chunk with include_usage, Anthropic's
// message_start and cumulative message_delta). Field names of both vendors are accepted in either kind of answer.
import { StringDecoder } from "node:string_decoder";

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
}

/** Larger JSON answers (embeddings of many inputs) are not parsed for usage; their requests still count. */
const MAX_JSON_BYTES = 16 * 1024 * 1024;
/** An SSE line longer than this is skipped rather than buffered. */
const MAX_LINE_BYTES = 1024 * 1024;

interface UsageFields {
  prompt_tokens?: unknown;
  completion_tokens?: unknown;
  input_tokens?: unknown;
  output_tokens?: unknown;
}

export class UsageMeter {
  readonly #sse: boolean;
  #input = 0;
  #output = 0;
  #seen = false;
  #chunks: Buffer[] = [];
  #bytes = 0;
  #line = "";
  #skippingLine = false;
  readonly #decoder = new StringDecoder("utf8");

  constructor(contentType: string | undefined) {
    this.#sse = (contentType ?? "").toLowerCase().startsWith("text/event-stream");
  }

  push(chunk: Buffer): void {
    if (!this.#sse) {
      this.#bytes += chunk.length;
      if (this.#bytes <= MAX_JSON_BYTES) this.#chunks.push(chunk);
      return;
    }
    const text = this.#decoder.write(chunk);
    const end = text.lastIndexOf("\n");
    if (end === -1) {
      this.#line += text;
    } else {
      const complete = this.#line + text.slice(0, end);
      this.#line = text.slice(end + 1);
      // Most events are content deltas: only lines that mention usage are split out and parsed (parsing every
      // event's JSON was a measurable share of the gateway's CPU per streamed answer).
      if (complete.includes("usage")) {
        const lines = complete.split("\n");
        for (let i = 0; i < lines.length; i++) {
          if (i === 0 && this.#skippingLine) continue;
          if (lines[i]!.includes("usage")) this.#sseLine(lines[i]!);
        }
      }
      this.#skippingLine = false;
    }
    if (this.#line.length > MAX_LINE_BYTES) {
      this.#line = "";
      this.#skippingLine = true;
    }
  }

  /** The usage read so far (the whole answer's once it has ended); undefined when none was reported. */
  finish(): TokenUsage | undefined {
    if (this.#sse) {
      this.#line += this.#decoder.end();
      if (this.#line && !this.#skippingLine) this.#sseLine(this.#line);
      this.#line = "";
    } else if (this.#bytes <= MAX_JSON_BYTES && this.#chunks.length > 0) {
      this.#json(Buffer.concat(this.#chunks).toString("utf8"));
      this.#chunks = [];
    }
    return this.#seen ? { inputTokens: this.#input, outputTokens: this.#output } : undefined;
  }

  #sseLine(line: string): void {
    const trimmed = line.endsWith("\r") ? line.slice(0, -1) : line;
    if (!trimmed.startsWith("data:")) return;
    const data = trimmed.slice(5).trim();
    if (data === "" || data === "[DONE]") return;
    this.#json(data);
  }

  #json(text: string): void {
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch {
      return;
    }
    if (doc === null || typeof doc !== "object") return;
    const o = doc as { usage?: UsageFields | null; message?: { usage?: UsageFields | null } | null };
    this.#take(o.usage);
    this.#take(o.message?.usage);
  }

  #take(u: UsageFields | null | undefined): void {
    if (!u || typeof u !== "object") return;
    const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : undefined);
    const input = num(u.prompt_tokens) ?? num(u.input_tokens);
    const output = num(u.completion_tokens) ?? num(u.output_tokens);
    // Later events restate totals (Anthropic's message_delta is cumulative): the latest value wins.
    if (input !== undefined) this.#input = input;
    if (output !== undefined) this.#output = output;
    if (input !== undefined || output !== undefined) this.#seen = true;
  }
}
