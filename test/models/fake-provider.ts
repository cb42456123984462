// A fake model provider on loopback, OpenAI-compatible and Anthropic-compatible at once, told per request what to
// do: answer JSON with usage, stream SSE (optionally holding back after the first event until released), fail with
// 500 or 429, hang without answering, or drop the connection mid-stream. It records every request it receives.
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export type FakeMode = "json" | "sse" | "sse-hold" | "500" | "429" | "hang" | "drop";

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** SSE events of a streamed chat completion with a final usage chunk (OpenAI's include_usage). */
export const OPENAI_SSE_EVENTS = [
  `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}\n\n`,
  `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"lo"}}]}\n\n`,
  `data: {"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}\n\n`,
  `data: [DONE]\n\n`,
];

/** Anthropic's stream: usage in message_start (input) and cumulative in message_delta (output). */
export const ANTHROPIC_SSE_EVENTS = [
  `event: message_start\ndata: {"type":"message_start","message":{"id":"m1","type":"message","role":"assistant","usage":{"input_tokens":21,"output_tokens":1}}}\n\n`,
  `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}\n\n`,
  `event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}\n\n`,
  `event: message_stop\ndata: {"type":"message_stop"}\n\n`,
];

export class FakeProvider {
  readonly received: ReceivedRequest[] = [];
  /** What the next requests do; when empty, `fallback`. */
  readonly script: FakeMode[] = [];
  fallback: FakeMode = "json";
  readonly #server: Server;
  readonly #held = new Set<() => void>();
  readonly #open = new Set<ServerResponse>();
  #port = 0;

  constructor(readonly name: string) {
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const path = (req.url ?? "/").split("?")[0]!;
        this.received.push({ method: req.method ?? "", path, headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
        this.#answer(this.script.shift() ?? this.fallback, path, res);
      });
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", resolve));
    this.#port = (this.#server.address() as AddressInfo).port;
    return this;
  }

  get port(): number {
    return this.#port;
  }

  /** Base URL as configured for an OpenAI-compatible provider (with /v1) or an Anthropic one (the root). */
  baseUrl(kind: "openai" | "anthropic"): string {
    return kind === "openai" ? `http://127.0.0.1:${this.#port}/v1` : `http://127.0.0.1:${this.#port}`;
  }

  /** Let held streams (sse-hold) send the rest. */
  release(): void {
    for (const go of this.#held) go();
    this.#held.clear();
  }

  async close(): Promise<void> {
    this.release();
    for (const res of this.#open) res.destroy();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #answer(mode: FakeMode, path: string, res: ServerResponse): void {
    const anthropic = path === "/v1/messages";
    const events = anthropic ? ANTHROPIC_SSE_EVENTS : OPENAI_SSE_EVENTS;
    switch (mode) {
      case "json": {
        const body = anthropic
          ? { id: "m1", type: "message", role: "assistant", content: [{ type: "text", text: `from ${this.name}` }], usage: { input_tokens: 5, output_tokens: 3 } }
          : { id: "c1", object: "chat.completion", provider: this.name, choices: [{ index: 0, message: { role: "assistant", content: `from ${this.name}` } }], usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 } };
        res.writeHead(200, { "content-type": "application/json", "x-served-by": this.name }).end(JSON.stringify(body));
        return;
      }
      case "sse":
      case "sse-hold":
      case "drop": {
        res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", "x-served-by": this.name });
        res.write(events[0]);
        const rest = () => {
          if (mode === "drop") {
            res.write(events[1]);
            // Gone mid-answer, without the chunked terminator.
            setImmediate(() => res.socket?.destroy());
            return;
          }
          for (const e of events.slice(1)) res.write(e);
          res.end();
        };
        if (mode === "sse-hold") this.#held.add(rest);
        else rest();
        return;
      }
      case "500":
        res.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: `${this.name} is down`, type: "server_error" } }));
        return;
      case "429":
        res.writeHead(429, { "content-type": "application/json", "retry-after": "1" }).end(JSON.stringify({ error: { message: `${this.name} rate limited`, type: "rate_limit_exceeded" } }));
        return;
      case "hang":
        this.#open.add(res);
        return;
    }
  }
}
